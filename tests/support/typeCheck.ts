/** The TypeScript compiler's verdict on partners' code, as `tsc --strict --noEmit` would give it. */
import ts from 'typescript';

/** Every diagnostic for `files`, as `TS<code>: <message>`. */
export function typeErrors(files: readonly string[], options: ts.CompilerOptions = {}): string[] {
  const program = ts.createProgram([...files], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    skipLibCheck: true,
    ...options,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
}
