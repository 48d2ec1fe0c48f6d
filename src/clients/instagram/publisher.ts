// Publishing one Instagram post, as a sequence of durable steps: read the publishing quota, create
// the container (a photo, a reel, or a carousel's children then its parent), poll the container
// until Meta has processed it, publish it, read the permalink. Every transition is saved before
// the next call to Meta, and `publishing` is saved before media_publish: a restarted step that
// finds a post in `publishing` asks Meta whether the container was already published and, if so,
// recovers the media instead of publishing twice. Returns when to run the next step (null: done).
// Platform-free: the Graph client, the signed-URL maker, the clock and the save are injected.
import type { PostError, PostState } from "../../db/stores/post-store.ts";
import { GraphApiError, type GraphClient } from "./graph.ts";

export type { PostError, PostItem, PostState, PostStatus } from "../../db/stores/post-store.ts";

export interface PublisherDeps {
  graph: GraphClient;
  /** A URL Meta can fetch the object from (signed, expiring). */
  mediaUrl(key: string): Promise<string>;
  now(): number;
  save(post: PostState): Promise<void>;
  /** Writes the caption in the agent's voice; absent when no model is configured. */
  writeCaption?(post: PostState): Promise<string>;
}

export const POLL_DELAYS_MS = [2_000, 4_000, 8_000, 15_000, 30_000] as const;
export const MAX_PROCESSING_MS = { image: 5 * 60_000, video: 15 * 60_000 } as const;
export const MAX_TRANSIENT_ATTEMPTS = 6;
const TRANSIENT_BASE_DELAY_MS = 5_000;

export async function publishStep(post: PostState, deps: PublisherDeps): Promise<number | null> {
  try {
    return await advance(post, deps);
  } catch (error) {
    // Our own failures (D1 down while saving) are not the post's: they propagate, and the step is
    // run again from the stored state. Only what Meta said can fail the post.
    if (!(error instanceof GraphApiError)) throw error;
    if (error.transient && post.attempts + 1 < MAX_TRANSIENT_ATTEMPTS) {
      post.attempts += 1;
      await save(post, deps);
      return TRANSIENT_BASE_DELAY_MS * 2 ** (post.attempts - 1);
    }
    await fail(post, deps, {
      code: "graph",
      message: `Instagram refused: ${error.message}${error.transient ? ` (still failing after ${MAX_TRANSIENT_ATTEMPTS} tries)` : ""}`,
      ...(error.code !== null ? { graphCode: error.code } : {}),
      ...(error.subcode !== null ? { graphSubcode: error.subcode } : {}),
    });
    return null;
  }
}

async function advance(post: PostState, deps: PublisherDeps): Promise<number | null> {
  for (;;) {
    switch (post.status) {
      case "stored":
      case "published":
      case "failed":
        return null;
      case "queued": {
        if (post.captionPending) {
          if (!(await captionFirst(post, deps))) return null;
          continue;
        }
        const quota = await deps.graph.publishingLimit();
        if (quota.used >= quota.total) {
          await fail(post, deps, {
            code: "quota_exhausted",
            message: `the account has used its publishing limit (${quota.used} of ${quota.total} posts in the last 24 hours); try again later`,
          });
          return null;
        }
        await createContainers(post, deps);
        post.status = "processing";
        post.processingSince = deps.now();
        post.attempts = 0;
        await save(post, deps);
        continue;
      }
      case "processing": {
        const status = await deps.graph.containerStatus(post.containerId!);
        if (status.statusCode === "FINISHED") {
          post.status = "publishing";
          await save(post, deps);
          continue;
        }
        if (status.statusCode === "PUBLISHED") {
          // Published by an earlier run that stopped before saving: recover, never publish again.
          post.status = "publishing";
          continue;
        }
        if (status.statusCode === "ERROR" || status.statusCode === "EXPIRED") {
          await fail(post, deps, {
            code: "container",
            message: `Instagram could not process the media (${status.statusCode}${status.status ? `: ${status.status}` : ""})`,
          });
          return null;
        }
        const limit = post.items.some((item) => item.kind === "video")
          ? MAX_PROCESSING_MS.video
          : MAX_PROCESSING_MS.image;
        if (deps.now() - (post.processingSince ?? deps.now()) > limit) {
          await fail(post, deps, {
            code: "timeout",
            message: `Instagram was still processing the media after ${Math.round(limit / 60_000)} minutes (${status.statusCode}); gave up`,
          });
          return null;
        }
        const delay = POLL_DELAYS_MS[Math.min(post.attempts, POLL_DELAYS_MS.length - 1)]!;
        post.attempts += 1;
        await save(post, deps);
        return delay;
      }
      case "publishing": {
        const status = await deps.graph.containerStatus(post.containerId!);
        const mediaId =
          status.statusCode === "PUBLISHED"
            ? await recover(post, deps)
            : await deps.graph.publish(post.containerId!);
        post.mediaId = mediaId;
        post.permalink = mediaId ? await deps.graph.permalink(mediaId) : null;
        post.status = "published";
        post.error = null;
        await save(post, deps);
        return null;
      }
    }
  }
}

/** Writes and stores the caption; false when it could not be written (the post has failed). */
async function captionFirst(post: PostState, deps: PublisherDeps): Promise<boolean> {
  if (!deps.writeCaption) {
    await fail(post, deps, {
      code: "not_configured",
      message: "generateCaption needs a model: configure OPENAI_API_KEY or the AI binding",
    });
    return false;
  }
  try {
    post.caption = await deps.writeCaption(post);
  } catch (error) {
    await fail(post, deps, {
      code: "caption",
      message: `the agent could not write the caption: ${error instanceof Error ? error.message : String(error)}`,
    });
    return false;
  }
  post.captionPending = false;
  await save(post, deps);
  return true;
}

async function createContainers(post: PostState, deps: PublisherDeps): Promise<void> {
  const caption = post.caption;
  if (post.items.length === 1) {
    const item = post.items[0]!;
    const url = await deps.mediaUrl(item.key);
    const params: Record<string, string> =
      item.kind === "video"
        ? { media_type: "REELS", video_url: url, caption }
        : { image_url: url, caption, ...(post.altText ? { alt_text: post.altText } : {}) };
    post.containerId = await deps.graph.createContainer(params);
    return;
  }
  // A carousel: children first (kept, so a retry does not create them again), then the parent.
  const children = post.children ?? [];
  for (let i = children.length; i < post.items.length; i++) {
    const item = post.items[i]!;
    const url = await deps.mediaUrl(item.key);
    children.push(
      await deps.graph.createContainer(
        item.kind === "video"
          ? { media_type: "VIDEO", video_url: url, is_carousel_item: "true" }
          : { image_url: url, is_carousel_item: "true" },
      ),
    );
    post.children = children;
    await save(post, deps);
  }
  post.containerId = await deps.graph.createContainer({
    media_type: "CAROUSEL",
    children: children.join(","),
    caption,
  });
}

/** Finds the media a container became, among the account's latest posts, by its caption. */
async function recover(post: PostState, deps: PublisherDeps): Promise<string | null> {
  const recent = await deps.graph.recentMedia();
  return recent.find((media) => (media.caption ?? "") === post.caption)?.id ?? null;
}

async function fail(post: PostState, deps: PublisherDeps, error: PostError): Promise<void> {
  post.status = "failed";
  post.error = error;
  await save(post, deps);
}

async function save(post: PostState, deps: PublisherDeps): Promise<void> {
  post.updatedAt = deps.now();
  await deps.save(post);
}
