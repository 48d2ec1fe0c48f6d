// The D1-Bookmark header on the routes that read or write over D1 sessions
// (src/db/read-sessions.ts): read from the caller, and answered with the bookmarks of what this
// request touched, so a caller that sends the last answer's value back reads its own writes even
// when a replica serves the read.
import type { Context } from "hono";
import type { AppEnv } from "./app-env.ts";
import {
  BOOKMARK_HEADER,
  createDatabaseSessions,
  type DatabaseSessions,
} from "../db/read-sessions.ts";

/** This request's sessions; a 400 `validation` naming the header when its value is malformed. */
export function sessionsOf(c: Context<AppEnv>): DatabaseSessions {
  return createDatabaseSessions(c.req.header(BOOKMARK_HEADER));
}

/** Sets the answer's header from what the sessions read or wrote (none: nothing was touched). */
export function answerBookmarks(c: Context<AppEnv>, sessions: DatabaseSessions): void {
  const value = sessions.header();
  if (value !== null) c.header(BOOKMARK_HEADER, value);
}
