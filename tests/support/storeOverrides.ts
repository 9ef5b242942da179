/** A store with some methods replaced (to count, or to slow, what a test watches); the others its own. */
import type { Store } from '../../lib/store';

export function overriding(store: Store, replaced: Partial<Store>): Store {
  return new Proxy(store, {
    get(target, property) {
      if (Object.prototype.hasOwnProperty.call(replaced, property)) return replaced[property as keyof Store];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
