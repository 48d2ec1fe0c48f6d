// Turns failed request validation (params, query, headers, JSON bodies) into the house error
// shape, listing every failing field by dotted path, the same way character files are reported.
import { ValidationError } from "../runtime/util/errors.ts";

interface IssueLike {
  path: readonly PropertyKey[];
  message: string;
}

export function validationError(target: string, issues: readonly IssueLike[]): ValidationError {
  const where = target === "json" ? "request body" : target;
  const listed = issues.map((issue) => ({
    path: issue.path.map(String).join("."),
    // A missing field is "required", as the character check says, not zod's "expected string,
    // received undefined".
    message: /received undefined$/.test(issue.message) ? "required" : issue.message,
  }));
  const first = listed[0];
  const summary = first ? `${first.path || where}: ${first.message}` : "invalid request";
  const more = listed.length > 1 ? ` (and ${listed.length - 1} more)` : "";
  return new ValidationError(`invalid ${where}: ${summary}${more}`, { issues: listed });
}
