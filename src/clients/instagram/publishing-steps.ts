// Instagram publishing as the agent's PostPublisher Durable Object runs it: one step of the
// publisher (src/clients/instagram/publisher.ts) at a time per post, the next step on the
// scheduler, and a watchdog step (cancelled when a step ends) that reruns a step cut off by an
// eviction. The object's class keeps only the RPC method and the schedule callback.
import { loadConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
import { stores } from "../../db/stores/index.ts";
import { assertWithinDailyBudget, dailyCeiling } from "../../runtime/turn/spend.ts";
import { dataUrl } from "../../media/data-url.ts";
import { mediaPostStore, publisherDeps, rememberPost } from "./platform.ts";
import { publishStep, type PostState } from "./publisher.ts";
import { checkCaption } from "../../media/validate.ts";
import { writeCaption } from "./caption-writer.ts";
import type { Character } from "../../runtime/character.ts";
import { modelChoiceFor } from "../../runtime/turn/turn-runner.ts";
import type { ChatModel, ModelChoice } from "../../runtime/ports/model.ts";

/** A publishing step cut off by an eviction is run again after this long. */
export const PUBLISH_WATCHDOG_S = 120;
/** Larger photos are not shown to the model when it writes a caption (base64 costs a third more). */
const MAX_CAPTION_IMAGE_BYTES = 4 * 1024 * 1024;

export interface PostPublishingHost {
  env: Env;
  agentId: string;
  /** Schedules the object's `publishStep` callback. */
  schedule(delaySeconds: number, postId: string): Promise<{ id: string }>;
  cancel(scheduleId: string): Promise<unknown>;
  /** The agent's character and the chat model, for caption writing; null without a model. */
  captionContext(): Promise<{ character: Character; model: ChatModel; models: ModelChoice } | null>;
}

export class PostPublishing {
  private readonly running = new Set<string>();
  private readonly host: PostPublishingHost;

  constructor(host: PostPublishingHost) {
    this.host = host;
  }

  async step(postId: string): Promise<void> {
    if (this.running.has(postId)) return;
    this.running.add(postId);
    const watchdog = await this.host.schedule(PUBLISH_WATCHDOG_S, postId);
    let finished = false;
    try {
      await this.once(postId);
      finished = true;
    } finally {
      this.running.delete(postId);
      // A step that threw (D1 down, say) keeps its watchdog: it is tried again.
      if (finished) await this.host.cancel(watchdog.id);
    }
  }

  private async once(postId: string): Promise<void> {
    const { env } = this.host;
    const store = mediaPostStore(env);
    const post = await store.get(this.host.agentId, postId);
    if (!post) return;
    const deps = publisherDeps(env);
    if ("missing" in deps) {
      if (post.status === "queued")
        await store.save({
          ...post,
          status: "failed",
          error: { code: "not_configured", message: deps.missing },
          updatedAt: Date.now(),
        });
      return;
    }
    if (post.captionPending) {
      const writer = await this.captionWriter();
      if (writer) deps.writeCaption = writer;
    }
    const next = await publishStep(post, deps);
    if (next !== null) await this.host.schedule(Math.max(1, Math.ceil(next / 1000)), postId);
    if (post.status === "published") await rememberPost(env, post);
  }

  /** The agent writing its caption with its primary model, looking at the first photo. */
  private async captionWriter(): Promise<((post: PostState) => Promise<string>) | null> {
    const context = await this.host.captionContext();
    if (!context) return null;
    const { character, model, models } = context;
    const { env, agentId } = this.host;
    const ledger = stores(env).spend;
    const ceiling = dailyCeiling(character, loadConfig(env).dailyTokenLimit);
    return async (post) => {
      // Caption writing is model spend like a turn's: refused once the day's budget is used up.
      await assertWithinDailyBudget(ledger, agentId, ceiling, Date.now());
      const first = post.items.find(
        (item) => item.kind === "image" && item.bytes <= MAX_CAPTION_IMAGE_BYTES,
      );
      const object = first ? await this.host.env.MEDIA.get(first.key) : null;
      const image = object
        ? dataUrl(first!.contentType, new Uint8Array(await object.arrayBuffer()))
        : undefined;
      const {
        caption,
        spent,
        model: answered,
      } = await writeCaption(
        character,
        { kinds: post.items.map((item) => item.kind), hint: post.caption || undefined, image },
        {
          model,
          modelName: modelChoiceFor(character, models).primary,
          check: checkCaption,
          cacheScope: agentId,
        },
      );
      await ledger.record({
        id: post.id,
        agentId,
        kind: "caption",
        roomId: null,
        userId: null,
        guildId: null,
        source: "instagram",
        model: answered,
        ...spent,
        tools: [],
        error: null,
        lateEmbeddings: 0,
        at: Date.now(),
      });
      return caption;
    };
  }
}
