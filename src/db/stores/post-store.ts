// Instagram posts in D1 (src/db/schema.ts `media_posts`): created by the upload route, advanced
// by the publisher in the agent's Durable Object. JSON columns are re-validated on read.
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { mediaPosts } from "../schema.ts";

/** An Instagram post as stored, and as the publisher (src/clients/instagram/publisher.ts) moves it. */
export interface PostItem {
  key: string;
  kind: "image" | "video";
  contentType: string;
  bytes: number;
  sha256: string;
  width?: number;
  height?: number;
}

export type PostStatus = "stored" | "queued" | "processing" | "publishing" | "published" | "failed";

export interface PostError {
  code: "quota_exhausted" | "graph" | "container" | "timeout" | "not_configured" | "caption";
  message: string;
  graphCode?: number;
  graphSubcode?: number;
}

export interface PostState {
  id: string;
  agentId: string;
  status: PostStatus;
  caption: string;
  /** The agent writes the caption first (the current caption is then only a hint). */
  captionPending: boolean;
  altText: string | null;
  items: PostItem[];
  containerId: string | null;
  children: string[] | null;
  mediaId: string | null;
  permalink: string | null;
  error: PostError | null;
  attempts: number;
  processingSince: number | null;
  /** When publishing started (ms), to recognise our post among recent media after a restart. */
  updatedAt: number;
}

/** A stored media item, as the row keeps it and the API shows it (src/http/routes/instagram/posts.ts). */
export const PostItemShape = z.object({
  key: z.string(),
  kind: z.enum(["image", "video"]),
  contentType: z.string(),
  bytes: z.number(),
  sha256: z.string(),
  width: z.number().optional(),
  height: z.number().optional(),
});
const Items = z.array(PostItemShape);
const PostErrorJson = z.object({
  code: z.enum(["quota_exhausted", "graph", "container", "timeout", "not_configured", "caption"]),
  message: z.string(),
  graphCode: z.number().optional(),
  graphSubcode: z.number().optional(),
});

export interface MediaPostStore {
  insert(post: PostState & { createdAt: number }): Promise<void>;
  get(agentId: string, id: string): Promise<(PostState & { createdAt: number }) | null>;
  save(post: PostState): Promise<void>;
}

export function createMediaPostStore(db: Db): MediaPostStore {
  return {
    async insert(post) {
      await db.insert(mediaPosts).values({
        ...columns(post),
        id: post.id,
        agentId: post.agentId,
        createdAt: post.createdAt,
      });
    },
    async get(agentId, id) {
      const row = await db
        .select()
        .from(mediaPosts)
        .where(and(eq(mediaPosts.agentId, agentId), eq(mediaPosts.id, id)))
        .get();
      if (!row) return null;
      return {
        id: row.id,
        agentId: row.agentId,
        status: row.status,
        caption: row.caption,
        captionPending: row.captionPending,
        altText: row.altText,
        items: readJsonColumn(Items, row.items, `media_posts.items of ${row.id}`),
        containerId: row.containerId,
        children:
          row.children === null
            ? null
            : readJsonColumn(
                z.array(z.string()),
                row.children,
                `media_posts.children of ${row.id}`,
              ),
        mediaId: row.mediaId,
        permalink: row.permalink,
        error:
          row.error === null
            ? null
            : readJsonColumn(PostErrorJson, row.error, `media_posts.error of ${row.id}`),
        attempts: row.attempts,
        processingSince: row.processingSince,
        createdAt: row.createdAt,
        updatedAt: row.updatedAt,
      };
    },
    async save(post) {
      await db
        .update(mediaPosts)
        .set(columns(post))
        .where(and(eq(mediaPosts.agentId, post.agentId), eq(mediaPosts.id, post.id)));
    },
  };
}

function columns(post: PostState) {
  return {
    status: post.status,
    caption: post.caption,
    captionPending: post.captionPending,
    altText: post.altText,
    items: JSON.stringify(post.items),
    containerId: post.containerId,
    children: post.children ? JSON.stringify(post.children) : null,
    mediaId: post.mediaId,
    permalink: post.permalink,
    error: post.error ? JSON.stringify(post.error) : null,
    attempts: post.attempts,
    processingSince: post.processingSince,
    updatedAt: post.updatedAt,
  };
}
