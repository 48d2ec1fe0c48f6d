// PostPublisher: one Durable Object per agent (named by the agent id) that publishes its Instagram
// posts a step at a time (publishing-steps.ts): the next step on the scheduler, and a watchdog step
// that reruns one cut off by an eviction. Before this class, AgentRoom objects named
// `<agentId>:~instagram` did the same; a step still scheduled on one is forwarded here. The post's
// state is in D1 (src/db/stores/post-store.ts); what this object keeps is its scheduled steps,
// whose payload is read as a saved-state version (src/db/json-column.ts).
import { Agent } from "agents";
import { z } from "zod";
import { checkSaved, savedShape } from "../../db/json-column.ts";
import type { Env } from "../../env.ts";
import type { Character } from "../../runtime/character.ts";
import type { ChatModel, ModelChoice } from "../../runtime/ports/model.ts";
import {
  createCharacterSource,
  type CharacterSource,
} from "../../objects/shared/character-source.ts";
import { PostPublishing } from "./publishing-steps.ts";
import { createRoomRuntime, type RoomRuntime } from "../../objects/shared/agent-wiring.ts";
import { NO_PLUGINS } from "../../objects/shared/plugin-port.ts";
import type { PostPublisherRpc } from "../../rpc.ts";

/**
 * A scheduled step's payload, as the agents SDK keeps it in this object's storage. Version 1 is
 * written without its `v` (`{ postId }`, the form old `~instagram` rooms scheduled too, and the one
 * test/surfaces/instagram/instagram.test.ts expects); a later version writes it with its `v`.
 */
export const PUBLISH_STEP_SAVED_STATE = savedShape(z.looseObject({ postId: z.string() }));

interface CaptionRuntime {
  runtime: RoomRuntime;
  characters: CharacterSource;
}

export class PostPublisher extends Agent<Env> implements PostPublisherRpc {
  private publishing: PostPublishing | null = null;
  private captionRuntime: Promise<CaptionRuntime> | null = null;

  /** Runs the post's next step now; the steps after it run on the scheduler. */
  async publishPost(postId: string): Promise<void> {
    await this.steps().step(postId);
  }

  /** Schedule callback: a later step of a post, or its watchdog. */
  async publishStep(payload: unknown): Promise<void> {
    const { postId } = checkSaved(
      PUBLISH_STEP_SAVED_STATE,
      payload,
      "a scheduled publishing step in this object's storage",
    );
    await this.steps().step(postId);
  }

  private steps(): PostPublishing {
    this.publishing ??= new PostPublishing({
      env: this.env,
      agentId: this.name,
      schedule: (delaySeconds, postId) => this.schedule(delaySeconds, "publishStep", { postId }),
      cancel: (id) => this.cancelSchedule(id),
      captionContext: () => this.captionContext(),
    });
    return this.publishing;
  }

  /** The agent's character and chat model, to write a caption; null without a model. */
  private async captionContext(): Promise<{
    character: Character;
    model: ChatModel;
    models: ModelChoice;
  } | null> {
    const { runtime, characters } = await this.caption();
    if (!runtime.chat.model) return null;
    const character = await characters.character(this.name, await characters.version(this.name));
    return { character, model: runtime.chat.model, models: runtime.chat.models };
  }

  private caption(): Promise<CaptionRuntime> {
    const settled = () => Promise.resolve();
    this.captionRuntime ??= createRoomRuntime(this.env, this.name, { settled, plugins: NO_PLUGINS })
      .then((runtime) => ({ runtime, characters: createCharacterSource(runtime.agents) }))
      .catch((error: unknown) => {
        this.captionRuntime = null;
        throw error;
      });
    return this.captionRuntime;
  }
}
