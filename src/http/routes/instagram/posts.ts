// Instagram posts: POST /agents/:agentId/media streams the files (multipart) into R2, checked by
// content and hashed on the way (post-upload.ts), records the post in D1 and hands publishing to
// the agent's PostPublisher Durable Object; it answers 202 at once. A refused file, a bad
// field or a failed write removes everything the request wrote: nothing is kept half-done.
// GET /agents/:agentId/media/:postId shows where publishing stands.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { PostState } from "../../../clients/instagram/publisher.ts";
import { mediaPostStore } from "../../../clients/instagram/platform.ts";
import { PostItemShape } from "../../../db/stores/post-store.ts";
import { toHex } from "../../../runtime/util/hashing.ts";
import { AppError, NotFoundError } from "../../../runtime/util/errors.ts";
import type { AppEnv } from "../../app-env.ts";
import { guard } from "../../auth.ts";
import { assertAgentExists } from "../../known-agents.ts";
import { AgentIdParam, errorContent } from "../../schemas.ts";
import { receiveUpload } from "./post-upload.ts";
import { errorField, log } from "../../../log.ts";

const PostView = z
  .object({
    postId: z.string(),
    status: z.enum(["stored", "queued", "processing", "publishing", "published", "failed"]),
    caption: z.string(),
    items: z.array(PostItemShape),
    mediaId: z.string().nullable(),
    permalink: z.string().nullable(),
    error: z
      .object({
        code: z.string(),
        message: z.string(),
        graphCode: z.number().optional(),
        graphSubcode: z.number().optional(),
      })
      .nullable(),
    createdAt: z.number(),
    updatedAt: z.number(),
  })
  .openapi("InstagramPost");

const PostIdParam = z
  .string()
  .regex(/^post_[0-9a-f]{16}$/, "post ids look like post_ followed by 16 hex digits")
  .openapi({ param: { name: "postId", in: "path" }, example: "post_0123456789abcdef" });

/**
 * Documented as a plain schema, not a zod one: the route reads the multipart body itself (files
 * are checked by content, and unknown fields refused), so no generic validator may consume it.
 */
const UploadForm = {
  type: "object" as const,
  required: ["file"],
  properties: {
    file: {
      type: "array" as const,
      items: { type: "string" as const, format: "binary" },
      description: "One to ten files: JPEG photos and/or MP4 videos",
    },
    caption: { type: "string" as const, description: "At most 2,200 characters and 30 hashtags" },
    altText: { type: "string" as const, description: "Alternative text for a single photo" },
    publish: {
      type: "string" as const,
      enum: ["true", "false"],
      description: "Publish now (default true), or only store",
    },
    generateCaption: {
      type: "string" as const,
      enum: ["true", "false"],
      description: "The agent writes the caption in character (`caption`, if given, is its hint)",
    },
  },
};

export function postRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/media",
      summary: "Upload media for an Instagram post (and publish it)",
      ...guard("media:write"),
      request: {
        params: z.object({ agentId: AgentIdParam }),
        body: { required: true, content: { "multipart/form-data": { schema: UploadForm } } },
      },
      responses: {
        202: {
          description: "Stored; publishing runs in the agent's Durable Object",
          content: {
            "application/json": { schema: z.object({ postId: z.string(), status: z.string() }) },
          },
        },
        400: errorContent(
          "A file or the caption is not what Instagram accepts (the reason says which)",
        ),
        404: errorContent("No such agent"),
        413: errorContent("The upload is too large"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      await assertAgentExists(c.env, agentId);
      const postId = `post_${toHex(crypto.getRandomValues(new Uint8Array(8)))}`;
      const upload = await receiveUpload({
        request: c.req.raw,
        bucket: c.env.MEDIA,
        agentId,
        postId,
      });
      const { caption, publish } = upload;

      const now = Date.now();
      const post: PostState & { createdAt: number } = {
        id: postId,
        agentId,
        status: publish ? "queued" : "stored",
        caption,
        captionPending: upload.generateCaption,
        altText: upload.altText,
        items: upload.items,
        containerId: null,
        children: null,
        mediaId: null,
        permalink: null,
        error: null,
        attempts: 0,
        processingSince: null,
        createdAt: now,
        updatedAt: now,
      };
      try {
        await mediaPostStore(c.env).insert(post);
      } catch (error) {
        // Nothing half-written: the files go if the post cannot be recorded.
        await upload.discard();
        log.error("media_store_failed", { agentId, postId, error: errorField(error) });
        throw new AppError(
          "upstream",
          503,
          "storing the upload failed; nothing was kept, try again",
        );
      }
      if (publish) {
        const publisher = c.env.PUBLISHER.getByName(agentId);
        const started = publisher.publishPost(postId).catch((error: unknown) => {
          // The watchdog step scheduled by the publisher retries; log for the operator.
          log.error("publish_start_failed", { agentId, postId, error: errorField(error) });
        });
        try {
          c.executionCtx.waitUntil(started);
        } catch {
          // No execution context (a direct app.fetch in a script): the promise runs on its own.
        }
      }
      c.header("Location", `/agents/${agentId}/media/${postId}`);
      return c.json({ postId, status: post.status }, 202);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/media/{postId}",
      summary: "An Instagram post's status, error and permalink",
      ...guard("agents:read"),
      request: { params: z.object({ agentId: AgentIdParam, postId: PostIdParam }) },
      responses: {
        200: { description: "The post", content: { "application/json": { schema: PostView } } },
        404: errorContent("No such post"),
      },
    }),
    async (c) => {
      const { agentId, postId } = c.req.valid("param");
      const post = await mediaPostStore(c.env).get(agentId, postId);
      if (!post) throw new NotFoundError(`agent "${agentId}" has no post "${postId}"`);
      return c.json(
        {
          postId: post.id,
          status: post.status,
          caption: post.caption,
          items: post.items,
          mediaId: post.mediaId,
          permalink: post.permalink,
          error: post.error,
          createdAt: post.createdAt,
          updatedAt: post.updatedAt,
        },
        200,
      );
    },
  );
  return app;
}
