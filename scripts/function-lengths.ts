// The longest functions of src/runtime/ and src/objects/, read with the TypeScript compiler's own
// parser (the tsgo API, as test/node/import-graph.ts reads imports). A function's length is its own
// lines: its span less the spans of the functions written inside it, so a factory is not charged
// for the methods it returns. Run: npx node scripts/function-lengths.ts [count]
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { API } from "typescript/unstable/sync";
import type { Node, SourceFile } from "typescript/unstable/ast";
import {
  isArrowFunction,
  isConstructorDeclaration,
  isFunctionDeclaration,
  isFunctionExpression,
  isGetAccessorDeclaration,
  isIdentifier,
  isMethodDeclaration,
  isPropertyAssignment,
  isSetAccessorDeclaration,
  isVariableDeclaration,
} from "typescript/unstable/ast/is";

/** The folders the house holds to the 100-line rule (STYLE.md, line 21). */
export const MEASURED_FOLDERS = ["src/runtime/", "src/objects/"];
export const MAX_FUNCTION_LINES = 100;

export interface FunctionLength {
  /** Relative to the root (`src/runtime/turn/turn-runner.ts`). */
  file: string;
  /** 1-based line of the function's first token. */
  line: number;
  /** The declared name, or the variable, property or method it is assigned to; null if none. */
  name: string | null;
  /** Lines of the function's own text: its span less the spans of functions nested in it. */
  lines: number;
}

/** Every function of the project's files under any of `folders`, longest first. */
export function measureFunctions(root: string, folders: readonly string[]): FunctionLength[] {
  const api = new API({ cwd: root });
  try {
    const snapshot = api.updateSnapshot({ openProjects: [join(root, "tsconfig.json")] });
    const project = snapshot.getProject(join(root, "tsconfig.json"));
    if (!project) throw new Error("tsconfig.json did not open as a project");
    const found: FunctionLength[] = [];
    for (const fileName of project.program.getSourceFileNames()) {
      const file = relative(root, fileName);
      if (file.endsWith(".d.ts") || !folders.some((folder) => file.startsWith(folder))) continue;
      const source = project.program.getSourceFile(fileName);
      if (!source) throw new Error(`no source file for ${fileName}`);
      found.push(...functionLengthsOf(file, source));
    }
    return found.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
  } finally {
    api.close();
  }
}

/** The functions of one parsed file, each with its own length. */
export function functionLengthsOf(file: string, source: SourceFile): FunctionLength[] {
  const found: FunctionLength[] = [];
  // Returns the span (in lines) of the functions met under `node`, outermost only, so the caller
  // can subtract them from its own span.
  const visit = (node: Node): number => {
    if (isFunctionLike(node)) {
      const first = lineOf(source, node.getStart(source));
      const span = lineOf(source, node.end) - first + 1;
      let nested = 0;
      node.forEachChild((child) => {
        nested += visit(child);
      });
      found.push({ file, line: first, name: nameOf(node), lines: span - nested });
      return span;
    }
    let nested = 0;
    node.forEachChild((child) => {
      nested += visit(child);
    });
    return nested;
  };
  for (const statement of source.statements) visit(statement);
  return found;
}

function isFunctionLike(node: Node): boolean {
  return (
    isFunctionDeclaration(node) ||
    isFunctionExpression(node) ||
    isArrowFunction(node) ||
    isMethodDeclaration(node) ||
    isConstructorDeclaration(node) ||
    isGetAccessorDeclaration(node) ||
    isSetAccessorDeclaration(node)
  );
}

function nameOf(node: Node): string | null {
  if (isConstructorDeclaration(node)) return "constructor";
  const own = (node as { name?: Node }).name;
  if (own && isIdentifier(own)) return own.text;
  const parent = node.parent;
  if (parent && (isVariableDeclaration(parent) || isPropertyAssignment(parent)))
    return isIdentifier(parent.name) ? parent.name.text : null;
  return null;
}

/** 1-based line of a position. */
function lineOf(source: SourceFile, position: number): number {
  const starts = source.getLineStarts();
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (starts[middle]! <= position) low = middle;
    else high = middle - 1;
  }
  return low + 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(fileURLToPath(new URL(".", import.meta.url)), "..");
  const count = Number(process.argv[2] ?? 10);
  for (const f of measureFunctions(root, MEASURED_FOLDERS).slice(0, count))
    console.log(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name ?? "(anonymous)"}`);
}
