// Binds the publisher to the worker's environment: the Graph client, signed media URLs from
// PUBLIC_BASE_URL (Meta must be able to fetch them; links last a day), the D1 post store, and
// the memory of what the agent posted.
import { loadConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
import type { MediaPostStore } from "../../db/stores/post-store.ts";
import { agentData, stores } from "../../db/stores/index.ts";
import { signMediaUrl } from "../../media/signed-url.ts";
import { createGraphClient } from "./graph.ts";
import type { PostState, PublisherDeps } from "./publisher.ts";

export const MEDIA_URL_LIFETIME_S = 24 * 3600;

export function mediaPostStore(env: Env): MediaPostStore {
  return stores(env).posts;
}

/** Null with the reason when publishing cannot work in this deployment. */
export function publisherDeps(env: Env): PublisherDeps | { missing: string } {
  const config = loadConfig(env);
  if (!config.instagram)
    return {
      missing: config.surfacesOff.instagram
        ? `Instagram is off: ${config.surfacesOff.instagram}`
        : "INSTAGRAM_USER_ID and INSTAGRAM_ACCESS_TOKEN must be set to publish",
    };
  if (!config.publicBaseUrl)
    return { missing: "PUBLIC_BASE_URL must be set: Instagram fetches the media from it" };
  if (!config.secretsKey) return { missing: "SECRETS_KEY must be set: it signs the media links" };
  const { publicBaseUrl, secretsKey } = config;
  const store = mediaPostStore(env);
  return {
    graph: createGraphClient({
      baseUrl: config.instagram.graphBase,
      userId: config.instagram.userId,
      accessToken: config.instagram.accessToken,
    }),
    mediaUrl: (key) =>
      signMediaUrl(
        publicBaseUrl,
        key,
        Math.floor(Date.now() / 1000) + MEDIA_URL_LIFETIME_S,
        secretsKey,
      ),
    now: () => Date.now(),
    save: (post) => store.save(post),
  };
}

/** The agent remembers what it posted (searchable like any message it wrote). */
export async function rememberPost(env: Env, post: PostState): Promise<void> {
  await (await agentData(env, post.agentId)).memories.saveMemory({
    id: `instagram:${post.id}`,
    type: "message",
    agentId: post.agentId,
    roomId: "instagram",
    userId: null,
    content: {
      text: `I posted on Instagram${post.permalink ? ` (${post.permalink})` : ""}: ${post.caption || "(no caption)"}`,
      role: "agent",
      source: "instagram",
    },
    metadata: { postId: post.id, mediaId: post.mediaId, items: post.items.length },
    createdAt: Date.now(),
  });
}
