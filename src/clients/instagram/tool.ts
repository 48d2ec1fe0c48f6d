// `instagram_publish`: an agent with Instagram configured can publish a post that was uploaded
// without publishing (POST /agents/:agentId/media with publish=false), with a caption of its own
// or one it is asked to write. Characters that list it in settings.toolApproval get a person's
// approval first (Discord). The post is handed to the agent's PostPublisher object.
import { checkCaption } from "../../media/validate.ts";
import type { MediaPostStore } from "../../memory/media-posts.ts";
import type { ToolDefinition, ToolHost } from "../../runtime/types.ts";

export const INSTAGRAM_PUBLISH_TOOL: ToolDefinition = {
  name: "instagram_publish",
  description:
    "Publish an uploaded Instagram post (one saved with publish=false) to the account. Give the caption to use, or generateCaption: true to write it in your voice.",
  parameters: {
    type: "object",
    properties: {
      postId: {
        type: "string",
        pattern: "^post_[0-9a-f]{16}$",
        description: "The uploaded post, e.g. post_0123456789abcdef",
      },
      caption: { type: "string", maxLength: 2200 },
      generateCaption: { type: "boolean" },
    },
    required: ["postId"],
    additionalProperties: false,
  },
  source: "builtin",
};

export function createInstagramToolHost(options: {
  agentId: string;
  posts: MediaPostStore;
  startPublishing: (postId: string) => Promise<void>;
  now: () => number;
}): ToolHost {
  return {
    async list() {
      return [INSTAGRAM_PUBLISH_TOOL];
    },
    async call(name, args) {
      if (name !== INSTAGRAM_PUBLISH_TOOL.name)
        return { ok: false, error: `unknown tool "${name}"` };
      const postId = String(args.postId);
      const post = await options.posts.get(options.agentId, postId);
      if (!post) return { ok: false, error: `there is no uploaded post ${postId}` };
      if (post.status !== "stored")
        return {
          ok: false,
          error: `post ${postId} is already ${post.status}; only a post saved with publish=false can be published this way`,
        };
      const generate = args.generateCaption === true;
      const caption = typeof args.caption === "string" ? args.caption : post.caption;
      const problem = generate ? null : checkCaption(caption);
      if (problem) return { ok: false, error: problem };
      await options.posts.save({
        ...post,
        status: "queued",
        caption,
        captionPending: generate,
        updatedAt: options.now(),
      });
      await options.startPublishing(postId);
      const now = await options.posts.get(options.agentId, postId);
      return {
        ok: true,
        content: `Post ${postId} is being published (status: ${now?.status ?? "queued"}). It takes from seconds to a few minutes; its permalink appears when it is done.`,
      };
    },
  };
}
