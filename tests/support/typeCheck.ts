/** The TypeScript compiler's verdict on partners' code, as `tsc --strict --noEmit` would give it. */
import ts from 'typescript';

/**
 * Declaration files under node_modules (TypeScript's own lib files among them), parsed once per test file
 * and compiler options: no test writes them, and parsing lib.dom.d.ts and the libraries' types again was
 * most of each check's time. A file of the test's own is read and parsed anew every time, as tsc would.
 */
const parsed = new Map<string, ts.SourceFile | undefined>();
const INSTALLED = /[\\/]node_modules[\\/]/;

function compilerHost(options: ts.CompilerOptions): ts.CompilerHost {
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  const settings = JSON.stringify(options);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreateNewSourceFile) => {
    if (!INSTALLED.test(fileName) || shouldCreateNewSourceFile === true) return read(fileName, languageVersion, onError, shouldCreateNewSourceFile);
    const form = typeof languageVersion === 'object' ? `${languageVersion.languageVersion}/${languageVersion.impliedNodeFormat}` : String(languageVersion);
    const key = `${fileName}\u0000${form}\u0000${settings}`;
    if (!parsed.has(key)) parsed.set(key, read(fileName, languageVersion, onError));
    return parsed.get(key);
  };
  return host;
}

/** Every diagnostic for `files`, as `TS<code>: <message>`. */
export function typeErrors(files: readonly string[], options: ts.CompilerOptions = {}): string[] {
  const compilerOptions: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    skipLibCheck: true,
    ...options,
  };
  const program = ts.createProgram([...files], compilerOptions, compilerHost(compilerOptions));
  return ts.getPreEmitDiagnostics(program).map((d) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
}
