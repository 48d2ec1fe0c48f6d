// `instagram_publish`, as a plugin on by default wherever the deployment has Instagram
// configured: an agent can publish a post that was uploaded without publishing (POST
// /agents/:agentId/media with publish=false), with a caption of its own or one it is asked to
// write. Characters that list it in settings.toolApproval get a person's approval first
// (Discord). The post is handed to the agent's PostPublisher object (through the host's service).
import { z } from "zod";
import { checkCaption } from "../../media/validate.ts";
import { definePlugin, defineTool } from "../plugin-api.ts";

const PublishArgs = z.strictObject({
  postId: z
    .string()
    .regex(/^post_[0-9a-f]{16}$/)
    .describe("The uploaded post, e.g. post_0123456789abcdef"),
  caption: z.string().max(2200).optional(),
  generateCaption: z.boolean().optional(),
});

export const instagramPublish = defineTool({
  name: "instagram_publish",
  description:
    "Publish an uploaded Instagram post (one saved with publish=false) to the account. Give the caption to use, or generateCaption: true to write it in your voice.",
  args: PublishArgs,
  available: ({ services }) => services.instagram !== null,
  async run(args, { agent, services, clock }) {
    const instagram = services.instagram;
    if (!instagram) return { ok: false, error: "Instagram is not configured on this deployment" };
    const { postId } = args;
    const post = await instagram.posts.get(agent.id, postId);
    if (!post) return { ok: false, error: `there is no uploaded post ${postId}` };
    if (post.status !== "stored")
      return {
        ok: false,
        error: `post ${postId} is already ${post.status}; only a post saved with publish=false can be published this way`,
      };
    const generate = args.generateCaption === true;
    const caption = args.caption ?? post.caption;
    const problem = generate ? null : checkCaption(caption);
    if (problem) return { ok: false, error: problem };
    await instagram.posts.save({
      ...post,
      status: "queued",
      caption,
      captionPending: generate,
      updatedAt: clock.now(),
    });
    await instagram.startPublishing(postId);
    const now = await instagram.posts.get(agent.id, postId);
    return `Post ${postId} is being published (status: ${now?.status ?? "queued"}). It takes from seconds to a few minutes; its permalink appears when it is done.`;
  },
});

export const instagramPlugin = definePlugin({
  name: "instagram",
  description:
    "Publish uploaded Instagram posts (instagram_publish); on when Instagram is configured.",
  enabledByDefault: (deployment) => deployment.instagram,
  tools: [instagramPublish],
});
