// Instagram posts: POST /agents/:agentId/media takes the files (multipart), checks them by content
// (src/media/validate.ts) and the caption, stores them in R2 with their SHA-256, records the post in
// D1 and hands publishing to the agent's `<agentId>:~instagram` Durable Object; it answers 202 at
// once. Everything is checked before anything is stored, and a failed write removes what was
// written. GET /agents/:agentId/media/:postId shows where publishing stands.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { PostItem, PostState } from "../../clients/instagram/publisher.ts";
import { mediaPostStore } from "../../clients/instagram/platform.ts";
import { checkCaption, checkMedia } from "../../media/validate.ts";
import { sha256OfBytes, storeMedia } from "../../media/store.ts";
import { toHex } from "../../runtime/hashing.ts";
import { AppError, NotFoundError, ValidationError } from "../../runtime/errors.ts";
import type { AppEnv } from "../app-env.ts";
import { guard } from "../auth.ts";
import { assertAgentExists } from "../known-agents.ts";
import { AgentIdParam, errorContent } from "../schemas.ts";

export const MAX_POST_FILES = 10;
const MAX_ALT_TEXT_CHARS = 1_000;
const FIELDS = new Set(["file", "caption", "altText", "publish", "generateCaption"]);

const PostView = z
  .object({
    postId: z.string(),
    status: z.enum(["stored", "queued", "processing", "publishing", "published", "failed"]),
    caption: z.string(),
    items: z.array(z.object({ key: z.string(), kind: z.enum(["image", "video"]), contentType: z.string(), bytes: z.number(), sha256: z.string(), width: z.number().optional(), height: z.number().optional() })),
    mediaId: z.string().nullable(),
    permalink: z.string().nullable(),
    error: z.object({ code: z.string(), message: z.string(), graphCode: z.number().optional(), graphSubcode: z.number().optional() }).nullable(),
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
    file: { type: "array" as const, items: { type: "string" as const, format: "binary" }, description: "One to ten files: JPEG photos and/or MP4 videos" },
    caption: { type: "string" as const, description: "At most 2,200 characters and 30 hashtags" },
    altText: { type: "string" as const, description: "Alternative text for a single photo" },
    publish: { type: "string" as const, enum: ["true", "false"], description: "Publish now (default true), or only store" },
    generateCaption: { type: "string" as const, enum: ["true", "false"], description: "The agent writes the caption in character (`caption`, if given, is its hint)" },
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
      request: { params: z.object({ agentId: AgentIdParam }), body: { required: true, content: { "multipart/form-data": { schema: UploadForm } } } },
      responses: {
        202: { description: "Stored; publishing runs in the agent's Durable Object", content: { "application/json": { schema: z.object({ postId: z.string(), status: z.string() }) } } },
        400: errorContent("A file or the caption is not what Instagram accepts (the reason says which)"),
        404: errorContent("No such agent"),
        413: errorContent("The upload is too large"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      await assertAgentExists(c.env, agentId);
      let form: FormData;
      try {
        form = await c.req.raw.formData();
      } catch {
        throw new ValidationError("the body must be multipart/form-data with one or more `file` fields");
      }
      const unknown = [...new Set([...form.keys()].filter((key) => !FIELDS.has(key)))];
      if (unknown.length > 0) throw new ValidationError(`unknown fields: ${unknown.join(", ")} (expected file, caption, altText, publish, generateCaption)`);
      const files = form.getAll("file").filter((value): value is File => typeof value !== "string");
      if (files.length === 0 || files.length !== form.getAll("file").length) throw new ValidationError("send one to ten files in `file` fields");
      if (files.length > MAX_POST_FILES) throw new ValidationError(`a post has at most ${MAX_POST_FILES} files (a carousel); got ${files.length}`);
      const caption = single(form, "caption") ?? "";
      const altText = single(form, "altText");
      const publish = flag(form, "publish", true);
      const generateCaption = flag(form, "generateCaption", false);
      if (generateCaption && !publish) throw new ValidationError("generateCaption applies to a post being published (publish=true)");
      const captionProblem = checkCaption(caption);
      if (captionProblem) throw new ValidationError(captionProblem);
      if (altText !== undefined && (altText.length > MAX_ALT_TEXT_CHARS || files.length > 1)) {
        throw new ValidationError(`altText is for a single photo, at most ${MAX_ALT_TEXT_CHARS} characters`);
      }

      const postId = `post_${toHex(crypto.getRandomValues(new Uint8Array(8)))}`;
      const checked: Array<{ bytes: Uint8Array; item: PostItem }> = [];
      for (const [index, file] of files.entries()) {
        const bytes = new Uint8Array(await file.arrayBuffer());
        const check = checkMedia(bytes, `file ${index + 1} (${file.name || "unnamed"})`);
        if (!check.ok) throw new ValidationError(check.reason);
        const extension = check.kind === "image" ? "jpg" : "mp4";
        checked.push({
          bytes,
          item: {
            key: `media/${agentId}/${postId}/${index + 1}.${extension}`,
            kind: check.kind,
            contentType: check.contentType,
            bytes: bytes.length,
            sha256: await sha256OfBytes(bytes),
            ...(check.kind === "image" ? { width: check.width, height: check.height } : {}),
          },
        });
      }

      const now = Date.now();
      const post: PostState & { createdAt: number } = {
        id: postId,
        agentId,
        status: publish ? "queued" : "stored",
        caption,
        captionPending: generateCaption,
        altText: altText ?? null,
        items: checked.map((entry) => entry.item),
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
      const written: string[] = [];
      try {
        for (const { bytes, item } of checked) {
          await storeMedia(c.env.MEDIA, item.key, bytes, item.contentType, { postId }, item.sha256);
          written.push(item.key);
        }
        await mediaPostStore(c.env).insert(post);
      } catch (error) {
        // Nothing half-written: the files go if the post cannot be recorded.
        await c.env.MEDIA.delete(written).catch(() => undefined);
        console.error(JSON.stringify({ level: "error", msg: "media_store_failed", agentId, postId, error: error instanceof Error ? error.message : String(error) }));
        throw new AppError("upstream", 503, "storing the upload failed; nothing was kept, try again");
      }
      if (publish) {
        const room = c.env.ROOMS.getByName(`${agentId}:~instagram`);
        const started = room.publishPost(postId).catch((error: unknown) => {
          // The watchdog step scheduled by the room retries; log for the operator.
          console.error(JSON.stringify({ level: "error", msg: "publish_start_failed", agentId, postId, error: error instanceof Error ? error.message : String(error) }));
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
      responses: { 200: { description: "The post", content: { "application/json": { schema: PostView } } }, 404: errorContent("No such post") },
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

function flag(form: FormData, name: string, fallback: boolean): boolean {
  const value = single(form, name);
  if (value === undefined) return fallback;
  if (value !== "true" && value !== "false") throw new ValidationError(`${name} must be true or false`);
  return value === "true";
}

function single(form: FormData, name: string): string | undefined {
  const values = form.getAll(name);
  if (values.length > 1) throw new ValidationError(`send \`${name}\` once`);
  const value = values[0];
  if (value !== undefined && typeof value !== "string") throw new ValidationError(`\`${name}\` must be text, not a file`);
  return value;
}
