// The import graph of src/, read with the TypeScript compiler's own parser (the tsgo API), so
// `import type`, `export ... from`, `import("x")` and `typeof import("x")` all count as edges.
// test/node/boundaries.spec.ts holds the house's layering rules against it.
import { dirname, join, relative, resolve } from "node:path";
import { API } from "typescript/unstable/sync";
import {
  SyntaxKind,
  type NamedImportBindings,
  type Node,
  type SourceFile,
} from "typescript/unstable/ast";
import {
  isCallExpression,
  isExportDeclaration,
  isImportDeclaration,
  isImportTypeNode,
  isLiteralTypeNode,
  isNamedExports,
  isNamedImports,
  isStringLiteral,
} from "typescript/unstable/ast/is";

export interface ImportEdge {
  /** The importing file, relative to the repository root (`src/objects/conversation/agent-room.ts`). */
  from: string;
  /** As written (`../db/agent-store.ts`, `drizzle-orm/d1`). */
  specifier: string;
  /** The imported file relative to the root for a relative specifier, else null (a package). */
  target: string | null;
  typeOnly: boolean;
  line: number;
}

/** Every import, re-export and dynamic import of the project's files under `under` (e.g. `src/`). */
export function readImportGraph(root: string, under: string): ImportEdge[] {
  const api = new API({ cwd: root });
  try {
    const snapshot = api.updateSnapshot({ openProjects: [join(root, "tsconfig.json")] });
    const project = snapshot.getProject(join(root, "tsconfig.json"));
    if (!project) throw new Error("tsconfig.json did not open as a project");
    const edges: ImportEdge[] = [];
    for (const fileName of project.program.getSourceFileNames()) {
      const from = relative(root, fileName);
      if (!from.startsWith(under) || from.endsWith(".d.ts")) continue;
      const file = project.program.getSourceFile(fileName);
      if (!file) throw new Error(`no source file for ${fileName}`);
      edges.push(...importsOf(root, from, file));
    }
    return edges;
  } finally {
    api.close();
  }
}

function importsOf(root: string, from: string, file: SourceFile): ImportEdge[] {
  const edges: ImportEdge[] = [];
  const add = (specifier: string, typeOnly: boolean, at: Node) => {
    const target = specifier.startsWith(".")
      ? relative(root, resolve(root, dirname(from), specifier))
      : null;
    edges.push({ from, specifier, target, typeOnly, line: lineOf(file, at) });
  };
  const visit = (node: Node): void => {
    if (isImportDeclaration(node)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.phaseModifier === SyntaxKind.TypeKeyword ||
          (clause.name === undefined && onlyTypeSpecifiers(clause.namedBindings)));
      if (isStringLiteral(node.moduleSpecifier)) add(node.moduleSpecifier.text, typeOnly, node);
      return;
    }
    if (isExportDeclaration(node)) {
      const clause = node.exportClause;
      const typeOnly =
        node.isTypeOnly ||
        (clause !== undefined &&
          isNamedExports(clause) &&
          clause.elements.length > 0 &&
          clause.elements.every((element) => element.isTypeOnly));
      if (node.moduleSpecifier && isStringLiteral(node.moduleSpecifier))
        add(node.moduleSpecifier.text, typeOnly, node);
      return;
    }
    if (
      isImportTypeNode(node) &&
      isLiteralTypeNode(node.argument) &&
      isStringLiteral(node.argument.literal)
    )
      add(node.argument.literal.text, true, node);
    if (isCallExpression(node) && node.expression.kind === SyntaxKind.ImportKeyword) {
      const [first] = node.arguments;
      if (first && isStringLiteral(first)) add(first.text, false, node);
    }
    node.forEachChild(visit);
  };
  for (const statement of file.statements) visit(statement);
  return edges;
}

/** `import { type A, type B } from "x"` imports nothing at run time either. */
function onlyTypeSpecifiers(bindings: NamedImportBindings | undefined): boolean {
  if (bindings === undefined || !isNamedImports(bindings)) return false;
  return bindings.elements.length > 0 && bindings.elements.every((element) => element.isTypeOnly);
}

/** 1-based line of the node's first token (after its leading comments). */
function lineOf(file: SourceFile, node: Node): number {
  const start = node.getStart(file);
  const starts = file.getLineStarts();
  let line = 0;
  while (line + 1 < starts.length && starts[line + 1]! <= start) line++;
  return line + 1;
}
