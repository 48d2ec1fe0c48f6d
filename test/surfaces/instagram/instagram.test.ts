// Instagram publishing through the worker: uploads checked by content and stored in R2, posts in
// D1, the publisher in the agent's Durable Object against a Graph API stand-in that fetches the
// signed media links from the worker the way Meta does. Later steps (the scheduler's job) are run
// by the test, one at a time, as the alarm would.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AgentRoom, PostPublisher } from "../../../src/durable-objects.ts";
import { ADMIN_TOKEN, createTestAgent, json, MODEL_HOST } from "../../helpers/api.ts";
import { createGraphStandIn } from "../../stand-ins/graph-stand-in.ts";
import { createOpenAIStandIn } from "../../stand-ins/openai-stand-in.ts";

const graph = createGraphStandIn({
  userId: "17841400000000001",
  fetchMedia: (url) => exports.default.fetch(new Request(url)),
});
let realGraph = graph;
const model = createOpenAIStandIn();
const realFetch = globalThis.fetch;
vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.host === "graph.test") return realGraph.fetch(input, init);
  if (url.host === MODEL_HOST) return model.fetch(input, init);
  return realFetch(input, init);
});

afterEach(async () => {
  realGraph = createGraphStandIn({
    userId: "17841400000000001",
    fetchMedia: (url) => exports.default.fetch(new Request(url)),
  });
  await env.DB.exec("DROP TRIGGER IF EXISTS inject_publish_failure");
});

/** A JPEG's structure: SOI, JFIF, a baseline frame header with the size, a scan, EOI. */
function jpeg(
  width: number,
  height: number,
  options: { pad?: number; truncated?: boolean } = {},
): Uint8Array {
  const parts = [
    [0xff, 0xd8],
    [
      0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00,
      0x01, 0x00, 0x00,
    ],
    [
      0xff,
      0xc0,
      0x00,
      0x11,
      0x08,
      height >> 8,
      height & 0xff,
      width >> 8,
      width & 0xff,
      0x03,
      0x01,
      0x22,
      0x00,
      0x02,
      0x11,
      0x01,
      0x03,
      0x11,
      0x01,
    ],
    [0xff, 0xda, 0x00, 0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3f, 0x00],
    Array.from({ length: options.pad ?? 256 }, (_, i) => (i * 7) % 255),
    options.truncated ? [] : [0xff, 0xd9],
  ];
  return new Uint8Array(parts.flat());
}

const MP4 = new Uint8Array([
  0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0, 0x69, 0x73, 0x6f, 0x6d,
  0x6d, 0x70, 0x34, 0x32, 1, 2, 3, 4,
]);
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]);

async function upload(
  agentId: string,
  files: Array<{ bytes: Uint8Array; name: string }>,
  fields: Record<string, string> = {},
) {
  const form = new FormData();
  for (const file of files) form.append("file", new File([file.bytes], file.name));
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const response = await exports.default.fetch(
    new Request(`https://agents.test/agents/${agentId}/media`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: form,
    }),
  );
  return {
    status: response.status,
    body: await json<{ postId: string; status: string; error?: { message: string } }>(response),
  };
}

async function status(agentId: string, postId: string) {
  const response = await exports.default.fetch(
    new Request(`https://agents.test/agents/${agentId}/media/${postId}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    }),
  );
  return json<{
    status: string;
    mediaId: string | null;
    permalink: string | null;
    error: { code: string; message: string; graphCode?: number } | null;
    items: Array<{ sha256: string; key: string }>;
  }>(response);
}

/** Runs the post's scheduled steps, as the alarm would, until it is published or failed. */
async function drive(agentId: string, postId: string, maxSteps = 12) {
  const publisher = env.PUBLISHER.getByName(agentId);
  for (let step = 0; step < maxSteps; step++) {
    const current = await status(agentId, postId);
    if (current.status === "published" || current.status === "failed") return current;
    await runInDurableObject(publisher, (instance: PostPublisher) =>
      instance.publishStep({ postId }),
    );
  }
  return status(agentId, postId);
}

async function storedKeys(agentId: string): Promise<string[]> {
  return (await env.MEDIA.list({ prefix: `media/${agentId}/` })).objects.map(
    (object) => object.key,
  );
}

describe("Instagram publishing", () => {
  it("publishes a photo: checked, stored with its hash, fetched by Meta through a signed link, remembered", async () => {
    const agentId = await createTestAgent();
    const photo = jpeg(1080, 1080);
    const { status: code, body } = await upload(agentId, [{ bytes: photo, name: "sunset.jpg" }], {
      caption: "Golden hour #sunset",
      altText: "A sunset over the sea",
    });
    expect(code).toBe(202);
    expect(body).toMatchObject({
      postId: expect.stringMatching(/^post_[0-9a-f]{16}$/),
      status: "queued",
    });
    const done = await drive(agentId, body.postId);
    expect(done).toMatchObject({
      status: "published",
      mediaId: expect.any(String),
      permalink: expect.stringMatching(/^https:\/\/www\.instagram\.com\/p\//),
      error: null,
    });
    expect(realGraph.published).toHaveLength(1);
    const container = realGraph.containers[0]!;
    expect(container.params).toMatchObject({
      caption: "Golden hour #sunset",
      alt_text: "A sunset over the sea",
    });
    expect(container.params.image_url).toMatch(
      /^https:\/\/agents\.test\/media\/media\/.+\?exp=\d+&sig=/,
    );
    expect(realGraph.mediaFetches).toEqual([
      { url: container.params.image_url, status: 200, contentType: "image/jpeg" },
    ]);
    const object = await env.MEDIA.get(done.items[0]!.key);
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(photo);
    expect(object!.customMetadata?.sha256).toBe(done.items[0]!.sha256);
    const remembered = await env.DB.prepare(
      "SELECT content FROM memories WHERE agent_id = ? AND room_id = 'instagram'",
    )
      .bind(agentId)
      .first<{ content: string }>();
    expect(JSON.parse(remembered!.content).text).toContain(
      "I posted on Instagram (https://www.instagram.com/p/",
    );
  });

  it("polls a container through IN_PROGRESS with backoff, and ends ERROR and EXPIRED containers with the reason", async () => {
    const agentId = await createTestAgent();
    realGraph.statusSequences = [
      ["IN_PROGRESS", "IN_PROGRESS", "IN_PROGRESS", "FINISHED"],
      ["ERROR"],
      ["EXPIRED"],
    ];
    const slow = await upload(agentId, [{ bytes: jpeg(1080, 1350), name: "a.jpg" }]);
    expect(await drive(agentId, slow.body.postId)).toMatchObject({ status: "published" });
    expect(
      realGraph.calls.filter((call) => call === `GET /${realGraph.containers[0]!.id}`).length,
    ).toBeGreaterThanOrEqual(4);

    const broken = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "b.jpg" }]);
    expect(await drive(agentId, broken.body.postId)).toMatchObject({
      status: "failed",
      error: { code: "container", message: expect.stringContaining("ERROR") },
    });
    const expired = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "c.jpg" }]);
    expect(await drive(agentId, expired.body.postId)).toMatchObject({
      status: "failed",
      error: { code: "container", message: expect.stringContaining("EXPIRED") },
    });
    expect(realGraph.published).toHaveLength(1);
  });

  it("reads the publishing limit first and refuses, creating nothing, when it is used up", async () => {
    const agentId = await createTestAgent();
    realGraph.quota = { used: 100, total: 100 };
    const { body } = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "a.jpg" }]);
    const done = await drive(agentId, body.postId);
    expect(done).toMatchObject({
      status: "failed",
      error: { code: "quota_exhausted", message: expect.stringContaining("100 of 100") },
    });
    expect(realGraph.containers).toHaveLength(0);
    expect(realGraph.published).toHaveLength(0);
  });

  it("retries a transient Graph error, and reports a permanent one with its code", async () => {
    const agentId = await createTestAgent();
    realGraph.failNext({
      status: 500,
      code: 2,
      transient: true,
      message: "Service temporarily unavailable",
    });
    const first = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "a.jpg" }]);
    expect(await drive(agentId, first.body.postId)).toMatchObject({ status: "published" });

    realGraph.failNext({
      status: 400,
      code: 9004,
      subcode: 2207052,
      message: "Media download has failed",
    });
    const second = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "b.jpg" }]);
    expect(await drive(agentId, second.body.postId)).toMatchObject({
      status: "failed",
      error: {
        code: "graph",
        graphCode: 9004,
        message: expect.stringContaining("Media download has failed"),
      },
    });
    expect(realGraph.published).toHaveLength(1);
  });

  it("publishes a carousel (children, then the parent) and a reel", async () => {
    const agentId = await createTestAgent();
    const carousel = await upload(
      agentId,
      [
        { bytes: jpeg(1080, 1080), name: "1.jpg" },
        { bytes: jpeg(1080, 1080, { pad: 300 }), name: "2.jpg" },
        { bytes: MP4, name: "3.mp4" },
      ],
      { caption: "Three in one" },
    );
    expect(await drive(agentId, carousel.body.postId)).toMatchObject({ status: "published" });
    const [a, b, c, parent] = realGraph.containers;
    expect([a, b, c].map((child) => child!.params.is_carousel_item)).toEqual([
      "true",
      "true",
      "true",
    ]);
    expect(c!.params).toMatchObject({ media_type: "VIDEO" });
    expect(parent!.params).toMatchObject({
      media_type: "CAROUSEL",
      children: [a, b, c].map((child) => child!.id).join(","),
      caption: "Three in one",
    });

    const reel = await upload(agentId, [{ bytes: MP4, name: "clip.mp4" }], { caption: "A reel" });
    expect(await drive(agentId, reel.body.postId)).toMatchObject({ status: "published" });
    expect(realGraph.containers.at(-1)!.params).toMatchObject({
      media_type: "REELS",
      caption: "A reel",
      video_url: expect.stringContaining("/media/"),
    });
    expect(realGraph.published).toHaveLength(2);
  });

  it("resumes after an eviction between container and publish, and never publishes twice after a crash mid-publish", async () => {
    const agentId = await createTestAgent();
    realGraph.statusSequences = [["FINISHED"]];
    // The object dies while asking Meta about the container it has just created (as an eviction
    // or a deploy would cut it off); the next step runs in a new instance, from what D1 holds.
    let state: DurableObjectState | undefined;
    await runInDurableObject(env.PUBLISHER.getByName(agentId), (_instance, captured) => {
      state = captured;
    });
    const stand = realGraph;
    let evicted = false;
    realGraph = {
      ...stand,
      fetch: async (input, init) => {
        const request = new Request(input, init);
        if (
          !evicted &&
          request.method === "GET" &&
          stand.containers.some((c) => request.url.includes(`/${c.id}?`))
        ) {
          evicted = true;
          state!.abort("simulated eviction between container and publish");
          return new Promise<Response>(() => {});
        }
        return stand.fetch(request);
      },
    };
    const { body } = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "a.jpg" }]);
    await vi.waitFor(() => expect(evicted).toBe(true));
    expect((await status(agentId, body.postId)).status).toBe("processing");
    realGraph = stand;
    expect(await drive(agentId, body.postId)).toMatchObject({ status: "published" });
    expect(realGraph.published).toHaveLength(1);

    // D1 refuses to record "published": Meta has published, we have not stored it.
    await env.DB.exec(
      "CREATE TRIGGER inject_publish_failure BEFORE UPDATE ON media_posts WHEN NEW.status = 'published' BEGIN SELECT RAISE(ABORT, 'injected D1 failure'); END",
    );
    const second = await upload(
      agentId,
      [{ bytes: jpeg(1080, 1080, { pad: 500 }), name: "b.jpg" }],
      { caption: "only once" },
    );
    const publisher = env.PUBLISHER.getByName(agentId);
    await vi.waitFor(async () =>
      expect((await status(agentId, second.body.postId)).status).toBe("publishing"),
    );
    expect(realGraph.published).toHaveLength(2);
    await env.DB.exec("DROP TRIGGER inject_publish_failure");
    await runInDurableObject(publisher, (instance: PostPublisher) =>
      instance.publishStep({ postId: second.body.postId }),
    );
    const done = await status(agentId, second.body.postId);
    expect(done).toMatchObject({ status: "published", mediaId: realGraph.published[1]!.mediaId });
    expect(realGraph.published).toHaveLength(2);
  });

  it("finishes a post whose step was scheduled on the agent's old `~instagram` room, through PostPublisher", async () => {
    const agentId = await createTestAgent();
    realGraph.statusSequences = [["IN_PROGRESS", "FINISHED"]];
    const { body } = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "old.jpg" }], {
      caption: "from before v4",
      publish: "false",
    });
    // What a worker from before PostPublisher left behind: the post queued, and its next step
    // scheduled on the AgentRoom object named `<agentId>:~instagram`.
    await env.DB.prepare("UPDATE media_posts SET status = 'queued' WHERE id = ?")
      .bind(body.postId)
      .run();
    const oldRoom = env.ROOMS.getByName(`${agentId}:~instagram`);
    const steps = (instance: AgentRoom | PostPublisher) =>
      instance
        .getSchedules<{ postId: string }>()
        .filter((s) => s.callback === "publishStep")
        .map((s) => s.payload);
    await runInDurableObject(oldRoom, (instance: AgentRoom) =>
      instance.schedule(new Date(Date.now() - 1_000), "publishStep", { postId: body.postId }),
    );
    // Its alarm fires (run here, in case the runtime has not yet): the step is handed over.
    await runDurableObjectAlarm(oldRoom);
    await vi.waitFor(async () =>
      expect((await status(agentId, body.postId)).status).toBe("processing"),
    );
    expect(await runInDurableObject(oldRoom, (instance: AgentRoom) => steps(instance))).toEqual([]);
    // The next step is the new class's, and the post completes there.
    const publisher = env.PUBLISHER.getByName(agentId);
    expect(
      await runInDurableObject(publisher, (instance: PostPublisher) => steps(instance)),
    ).toEqual([{ postId: body.postId }]);
    expect(await drive(agentId, body.postId)).toMatchObject({ status: "published", error: null });
    expect(realGraph.published).toHaveLength(1);
    expect(realGraph.containers[0]!.params.caption).toBe("from before v4");
  });

  it("lets the agent write the caption in character, looking at the photo, and asks again when it breaks a rule", async () => {
    const agentId = await createTestAgent({
      postExamples: ["Salt in my hair, sun on my face."],
      style: { post: ["lowercase, dreamy"] },
    });
    model.script(
      { text: Array.from({ length: 31 }, (_, i) => `#t${i}`).join(" ") },
      { text: '"sea, sun and salt. #summer"' },
    );
    const { status: code, body } = await upload(
      agentId,
      [{ bytes: jpeg(1080, 1080), name: "beach.jpg" }],
      { caption: "our beach day", generateCaption: "true" },
    );
    expect(code).toBe(202);
    expect(await drive(agentId, body.postId)).toMatchObject({ status: "published" });
    expect(realGraph.containers[0]!.params.caption).toBe("sea, sun and salt. #summer");
    const [first, second] = model.calls.slice(-2);
    const system = String(first!.messages[0]!.content);
    expect(system).toContain("Salt in my hair, sun on my face.");
    expect(system).toContain("lowercase, dreamy");
    const ask = first!.messages[1]!.content as Array<{
      type: string;
      text?: string;
      image_url?: { url: string };
    }>;
    expect(ask.find((part) => part.type === "image_url")!.image_url!.url).toMatch(
      /^data:image\/jpeg;base64,/,
    );
    expect(ask.find((part) => part.type === "text")!.text).toContain(
      '<data source="uploader">\nour beach day\n</data>',
    );
    expect(String(second!.messages.at(-1)!.content)).toContain("31 hashtags");
    const bad = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "x.jpg" }], {
      generateCaption: "true",
      publish: "false",
    });
    expect(bad.status).toBe(400);
  });

  it("counts caption writing against the agent's daily model budget, and refuses it once spent", async () => {
    const agentId = await createTestAgent({ settings: { dailyTokens: 50 } });
    model.script({ text: "first caption", usage: { promptTokens: 40, completionTokens: 20 } });
    const first = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "a.jpg" }], {
      generateCaption: "true",
    });
    expect(await drive(agentId, first.body.postId)).toMatchObject({ status: "published" });
    const spent = await env.DB.prepare("SELECT tokens FROM model_usage_daily WHERE agent_id = ?")
      .bind(agentId)
      .first<{ tokens: number }>();
    expect(spent?.tokens).toBe(60);
    const calls = model.calls.length;
    const second = await upload(
      agentId,
      [{ bytes: jpeg(1080, 1080, { pad: 400 }), name: "b.jpg" }],
      { generateCaption: "true" },
    );
    expect(await drive(agentId, second.body.postId)).toMatchObject({
      status: "failed",
      error: {
        code: "caption",
        message: expect.stringContaining("daily model budget (60 of 50 tokens"),
      },
    });
    expect(model.calls.length).toBe(calls);
    expect(realGraph.published).toHaveLength(1);
  });

  it("lets the agent publish an uploaded post with its instagram_publish tool", async () => {
    const agentId = await createTestAgent();
    const stored = await upload(agentId, [{ bytes: jpeg(1080, 1080), name: "draft.jpg" }], {
      publish: "false",
    });
    expect(stored.body.status).toBe("stored");
    model.script(
      {
        toolCalls: [
          {
            name: "instagram_publish",
            arguments: { postId: stored.body.postId, caption: "Fresh from the oven #bread" },
          },
        ],
      },
      { text: "Posted!" },
    );
    const turn = await exports.default.fetch(
      new Request(`https://agents.test/agents/${agentId}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ userId: "baker", text: `please post ${stored.body.postId}` }),
      }),
    );
    expect(await json(turn)).toMatchObject({
      reply: { text: "Posted!" },
      toolCalls: [{ name: "instagram_publish", ok: true }],
    });
    expect(await drive(agentId, stored.body.postId)).toMatchObject({ status: "published" });
    expect(realGraph.containers[0]!.params.caption).toBe("Fresh from the oven #bread");
    // Once published, it cannot be published again.
    model.script(
      { toolCalls: [{ name: "instagram_publish", arguments: { postId: stored.body.postId } }] },
      { text: "no" },
    );
    const again = await exports.default.fetch(
      new Request(`https://agents.test/agents/${agentId}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ userId: "baker", text: "again" }),
      }),
    );
    expect(await json(again)).toMatchObject({
      toolCalls: [{ name: "instagram_publish", ok: false }],
    });
    expect(realGraph.published).toHaveLength(1);
  });

  it("refuses bad files and captions with the reason, storing nothing", async () => {
    const agentId = await createTestAgent();
    const cases: Array<
      [Array<{ bytes: Uint8Array; name: string }>, Record<string, string>, RegExp]
    > = [
      [
        [{ bytes: PNG, name: "photo.jpg" }],
        {},
        /is a PNG image; Instagram takes JPEG photos and MP4 videos only/,
      ],
      [[{ bytes: new Uint8Array(0), name: "empty.jpg" }], {}, /is empty/],
      [
        [{ bytes: jpeg(1080, 1080, { pad: 8 * 1024 * 1024 }), name: "huge.jpg" }],
        {},
        /at most 8388608 bytes/,
      ],
      [[{ bytes: jpeg(2000, 200), name: "wide.jpg" }], {}, /2000x200 \(aspect ratio 10\.00:1\)/],
      [[{ bytes: jpeg(1080, 1080, { truncated: true }), name: "cut.jpg" }], {}, /truncated JPEG/],
      [
        [{ bytes: jpeg(1080, 1080), name: "a.jpg" }],
        { caption: "x".repeat(2_201) },
        /2201 characters; Instagram allows 2200/,
      ],
      [
        [{ bytes: jpeg(1080, 1080), name: "a.jpg" }],
        { caption: Array.from({ length: 31 }, (_, i) => `#tag${i}`).join(" ") },
        /31 hashtags/,
      ],
      [
        [{ bytes: jpeg(1080, 1080), name: "a.jpg" }],
        { location: "Lisbon" },
        /unknown fields: location/,
      ],
      [
        Array.from({ length: 11 }, (_, i) => ({ bytes: jpeg(1080, 1080), name: `${i}.jpg` })),
        {},
        /at most 10 files/,
      ],
    ];
    for (const [files, fields, reason] of cases) {
      const { status: code, body } = await upload(agentId, files, fields);
      expect(code, String(reason)).toBe(400);
      expect(body.error!.message).toMatch(reason);
    }
    expect(await storedKeys(agentId)).toEqual([]);
    expect(
      (await env.DB.prepare("SELECT count(*) AS n FROM media_posts WHERE agent_id = ?")
        .bind(agentId)
        .first<{ n: number }>())!.n,
    ).toBe(0);
    expect(realGraph.calls).toHaveLength(0);
  });
});
