// Read replication through D1's Sessions API, per request. A read-only route reads over a session
// that starts at the bookmark its caller carried back (or anywhere: "first-unconstrained"), so a
// replica answers only once it holds what the caller last saw; a write runs over a
// "first-primary" session. Each answer carries the newest bookmark of every database it touched,
// and bookmarks belong to one database, so the caller's value keeps one per database.
import { ValidationError } from "../runtime/util/errors.ts";
import { type DatabaseName, isDatabaseName } from "./shards.ts";

/** The request and response header that carries the bookmarks (docs/api.md). */
export const BOOKMARK_HEADER = "D1-Bookmark";
/** D1's bookmarks are about 60 characters of hex and dashes; opaque here, but bounded. */
const BOOKMARK = /^[A-Za-z0-9._~+/=-]{1,256}$/;
/** Databases one value remembers: the catalog and a few memory databases; older ones drop off. */
const MAX_CARRIED_BOOKMARKS = 8;

export type SessionUse = "read" | "write";

/** The sessions of one request, and the bookmarks its caller carries. */
export interface DatabaseSessions {
  /**
   * `binding` (the database `name`) over this request's session of it: opened on first use, from
   * the caller's bookmark for a read, on the primary for a write; later calls share it.
   */
  open(name: DatabaseName, binding: D1Database, use: SessionUse): D1Database;
  /** What to answer in the header: the sessions' newest bookmarks, then the others carried in. */
  header(): string | null;
}

/** A 400 naming the header, quoting nothing of what was sent. */
function malformed(): ValidationError {
  return new ValidationError(
    `${BOOKMARK_HEADER} must be a value an earlier answer's ${BOOKMARK_HEADER} header held: up to ${MAX_CARRIED_BOOKMARKS} comma-separated "<database>:<bookmark>" pairs, each bookmark 1-256 letters, digits or . _ ~ + / = -`,
  );
}

/** The caller's bookmarks by database; a 400 (ValidationError) when the value is malformed. */
function parseBookmarks(value: string | undefined): Map<DatabaseName, string> {
  const carried = new Map<DatabaseName, string>();
  if (value === undefined || value.trim() === "") return carried;
  const pairs = value.split(",");
  if (pairs.length > MAX_CARRIED_BOOKMARKS) throw malformed();
  for (const pair of pairs) {
    const colon = pair.indexOf(":");
    const name = pair.slice(0, colon).trim();
    const bookmark = pair.slice(colon + 1).trim();
    if (colon < 0 || !isDatabaseName(name) || !BOOKMARK.test(bookmark) || carried.has(name))
      throw malformed();
    carried.set(name, bookmark);
  }
  return carried;
}

function formatBookmarks(bookmarks: Map<DatabaseName, string>): string | null {
  const pairs = [...bookmarks].slice(0, MAX_CARRIED_BOOKMARKS);
  return pairs.length === 0
    ? null
    : pairs.map(([name, bookmark]) => `${name}:${bookmark}`).join(", ");
}

/** Sessions for one request whose caller sent `carried` (the header's value, if any). */
export function createDatabaseSessions(carried: string | undefined): DatabaseSessions {
  const bookmarks = parseBookmarks(carried);
  const sessions = new Map<DatabaseName, D1DatabaseSession>();
  return {
    open(name, binding, use) {
      let session = sessions.get(name);
      if (!session) {
        session = binding.withSession(
          use === "write" ? "first-primary" : (bookmarks.get(name) ?? "first-unconstrained"),
        );
        sessions.set(name, session);
      }
      return sessionBinding(session);
    },
    header() {
      // The databases touched now first: they are the newest, and the first to stay at the cap.
      const answer = new Map<DatabaseName, string>();
      for (const [name, session] of sessions) {
        const bookmark = session.getBookmark();
        // Null before any query ran; one this parser would refuse next time is not handed out.
        if (bookmark !== null && BOOKMARK.test(bookmark)) answer.set(name, bookmark);
      }
      for (const [name, bookmark] of bookmarks) if (!answer.has(name)) answer.set(name, bookmark);
      return formatBookmarks(answer);
    },
  };
}

/**
 * A session as the D1Database drizzle and failuresNamed take: they prepare and batch, which a
 * session does; a session has no exec, dump or nested session, and nothing here asks for them.
 */
function sessionBinding(session: D1DatabaseSession): D1Database {
  const outside = (what: string) => (): never => {
    throw new TypeError(`${what} is not available on a D1 session`);
  };
  return {
    prepare: (query: string) => session.prepare(query),
    batch: <T>(statements: D1PreparedStatement[]) => session.batch<T>(statements),
    exec: outside("exec"),
    dump: outside("dump"),
    withSession: outside("withSession"),
  };
}
