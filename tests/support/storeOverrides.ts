/** A TableStore with some methods replaced (to count, or to slow, what a test watches); the others its own. */
import type { TableStore } from '../../lib/store';

type Methods = { [K in keyof TableStore]: TableStore[K] extends (...args: never[]) => unknown ? K : never }[keyof TableStore];

export function overriding(store: TableStore, replaced: Partial<Pick<TableStore, Methods>>): TableStore {
  return new Proxy(store, {
    get(target, property) {
      if (Object.prototype.hasOwnProperty.call(replaced, property)) return replaced[property as Methods];
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
