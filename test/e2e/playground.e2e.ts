// End-to-end test of the playground in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core, which downloads nothing): the worker bundled as `wrangler deploy` would ship it,
// with its static assets, in local workerd (bench/worker-harness.ts); the scripted model stand-in
// and the MCP test peers on loopback. A user signs in, pastes a character, chats (the model calls the
// built-in current_time tool first), watches the reply, connects an OAuth MCP server, searches
// memories, reads the agent's usage; screenshots at desktop and phone width go to test/artifacts/.
// Run: `npm run test:e2e`. Exits non-zero on any failure; the last line is `N passed, N failed`.
import { mkdirSync, readdirSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { startModelServer, type ModelServer } from "../../bench/model-server.ts";
import { startBenchWorker, type BenchWorker } from "../../bench/worker-harness.ts";
import { startMcpPeers, type McpPeers } from "../peers/mcp-peers.ts";
import { lastUserText } from "../helpers/model-messages.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARTIFACTS = "test/artifacts";
const STEP_TIMEOUT_MS = 20_000;
const AGENT_ID = "ada-e2e";
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
/** The stand-in model writes a word every 15 ms when streaming, so deltas arrive one by one. */
const CHUNK_DELAY_MS = 15;

const CHARACTER = {
  id: AGENT_ID,
  name: "Ada",
  bio: ["A precise, friendly helper who keeps a small garden."],
  lore: ["Ada grows tomatoes and basil on her balcony."],
  system: "You are Ada. Use tools when they help.",
  // No fact extraction or summaries: every model call in this test is a chat turn.
  // Prices, so the Usage panel shows estimated costs.
  settings: {
    memory: { factsEvery: 1000, summarizeAfter: 10000 },
    prices: { "e2e-model": { inputPerMillion: 0.4, outputPerMillion: 1.6 } },
  },
};

/** Forty words at 60 ms a word: long enough to leave the page in the middle of it. */
const SLOW_STORY = `Once upon a time ${Array.from({ length: 36 }, (_, i) => `word${i}`).join(" ")} the end.`;

/** The model: asked about the time, it calls current_time first, then answers with the tool's output. */
function scriptModel(model: ModelServer): void {
  model.respondWith((call) => {
    const last = call.messages.at(-1);
    // The person's words, without the context block the turn adds after them.
    const asked = lastUserText(call);
    if (last?.role === "tool" && /break/i.test(asked)) return { status: 400 };
    if (last?.role === "tool")
      return { text: `In Paris it is now ${String(last.content).slice(0, 80)}. Anything else?` };
    if (/slow story/i.test(asked)) return { text: SLOW_STORY, chunkDelayMs: 60 };
    if (/keep this as a skill/i.test(asked))
      return {
        toolCalls: [
          {
            name: "save_skill",
            arguments: {
              name: "greet-warmly",
              description: "Greet a newcomer by name.",
              body: "1. Say hello by name.\n2. Offer help.",
            },
          },
        ],
      };
    const echo = /echo: (.*)$/s.exec(asked);
    if (echo) return { text: echo[1]! };
    if (/time/i.test(asked) && call.tools?.length)
      return { toolCalls: [{ name: "current_time", arguments: { timeZone: "Europe/Paris" } }] };
    return { text: "Hello from the stand-in model." };
  });
}

let passed = 0;
let failed = 0;
/** Saves what the page looked like when a step failed. */
let failureShot: (() => Promise<unknown>) | undefined;

async function step(name: string, run: () => Promise<void>): Promise<void> {
  // Steps build on each other: after a failure the rest would only time out, so they are skipped
  // (and counted as failed).
  if (failed > 0) {
    failed += 1;
    console.log(`  skip  ${name}`);
    return;
  }
  try {
    await run();
    passed += 1;
    console.log(`  ok    ${name}`);
  } catch (error) {
    failed += 1;
    await failureShot?.().catch(() => undefined);
    console.log(
      `  FAIL  ${name}\n        ${(error instanceof Error ? error.message : String(error)).split("\n").join("\n        ")}`,
    );
  }
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/**
 * Runs an expression in the page. A string, not a function: this file is type-checked as Node code
 * (tsconfig.node.json, no DOM library), and the page's globals do not exist here.
 */
async function inPage<T = unknown>(page: Page, expression: string): Promise<T> {
  return (await page.evaluate(expression)) as T;
}

async function focused(page: Page, selector: string): Promise<boolean> {
  return (await page.locator(`${selector}:focus`).count()) === 1;
}

async function text(page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).allTextContents()).join("\n");
}

async function main(): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const model = await startModelServer({ chunkDelayMs: CHUNK_DELAY_MS });
  scriptModel(model);
  const peers: McpPeers = await startMcpPeers();
  let worker: BenchWorker | undefined;
  let browser: Browser | undefined;
  try {
    worker = await startBenchWorker({
      OPENAI_API_KEY: "e2e",
      OPENAI_BASE_URL: `${model.url}/v1`,
      MODEL: "e2e-model",
      ALLOW_LOOPBACK_FETCH: "true",
    });
    const { base, token } = worker;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    const context = await browser.newContext({ viewport: DESKTOP });
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    const page = await context.newPage();
    failureShot = () =>
      page.screenshot({ path: `${ARTIFACTS}/playground-failure.png`, fullPage: true });
    const foreign: string[] = [];
    const pageErrors: string[] = [];
    const turnContentTypes: string[] = [];
    let memoriesShown = 0;
    let memoriesListed = 0;
    let deltaRenders = 0;
    page.on("request", (request) => {
      if (!request.url().startsWith(base) && !request.url().startsWith("data:"))
        foreign.push(request.url());
    });
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("response", (response) => {
      if (
        response.request().method() === "POST" &&
        /\/agents\/[^/]+\/messages$/.test(response.url())
      ) {
        turnContentTypes.push(response.headers()["content-type"] ?? "");
      }
    });

    await step(
      "serves the page, its script and stylesheet as static assets, with a content security policy",
      async () => {
        for (const [path, type] of [
          ["/", "text/html"],
          ["/playground.js", "javascript"],
          ["/playground-usage.js", "javascript"],
          ["/playground-inspector.js", "javascript"],
          ["/playground.css", "text/css"],
          // Browsers ask for it on every page, /health's JSON included: no 404 in the dev log.
          ["/favicon.ico", "image/"],
        ] as const) {
          const response = await fetch(`${base}${path}`);
          check(response.status === 200, `${path}: HTTP ${response.status}`);
          check(
            (response.headers.get("content-type") ?? "").includes(type),
            `${path}: content-type ${response.headers.get("content-type")}`,
          );
        }
        const csp = (await fetch(`${base}/`)).headers.get("content-security-policy") ?? "";
        check(csp.includes("script-src 'self'"), `no CSP on the page: "${csp}"`);
        const api = await fetch(`${base}/agents`);
        check(
          api.status === 401,
          `the API behind the assets still needs a token: HTTP ${api.status}`,
        );
        // Assets are served before the worker runs: a file named like a route would shadow it
        // (public/health.html would answer /health, with html_handling's extension dropping).
        const spec = (await (await fetch(`${base}/openapi.json`)).json()) as {
          paths: Record<string, unknown>;
        };
        const routeRoots = new Set([
          "docs",
          "openapi.json",
          "discord",
          "oauth",
          ...Object.keys(spec.paths).map((path) => path.split("/")[1]!),
        ]);
        const shadowing = readdirSync("public").filter((name) =>
          routeRoots.has(name.replace(/\.html$/, "")),
        );
        check(
          shadowing.length === 0,
          `files in public/ shadow API routes: ${shadowing.join(", ")}`,
        );
      },
    );

    await step("asks for a token and says clearly when the server refuses it", async () => {
      await page.goto(base);
      check(await focused(page, "#token"), "the token field does not have focus");
      // Where the token comes from, said next to the field.
      const hint = await page.locator("#token-hint").textContent();
      check(hint?.includes(".dev.vars") && hint.includes("POST /auth/tokens"), `hint: "${hint}"`);
      await page.fill("#token", "not-the-token");
      await page.press("#token", "Enter");
      await page.locator("#token-status", { hasText: "refused" }).waitFor();
      check(
        await page.locator("#workspace").isHidden(),
        "the workspace shows without a valid token",
      );
      check(await focused(page, "#token"), "focus did not go back to the token field");
    });

    await step(
      "signs in with the token, keeps it in this tab only and never shows it",
      async () => {
        await page.fill("#token", token);
        await page.click("#token-form button[type=submit]");
        await page.locator("#workspace").waitFor({ state: "visible" });
        await page.locator("#signed-in", { hasText: "Signed in" }).waitFor();
        check(
          await page.locator("#token-form").isHidden(),
          "the token form stays open after signing in",
        );
        const stored = await inPage<{ session: string | null; local: number; cookie: string }>(
          page,
          `({ session: sessionStorage.getItem("edge-agents.token"), local: localStorage.length, cookie: document.cookie })`,
        );
        check(stored.session === token, "the token is not in sessionStorage");
        check(
          stored.local === 0 && stored.cookie === "",
          "the token leaked into localStorage or a cookie",
        );
        check(!(await page.content()).includes(token), "the token is rendered on the page");
        const unlabelled = await inPage<string[]>(
          page,
          `[...document.querySelectorAll("input, select, textarea")].filter((field) => field.labels.length === 0).map((field) => field.id)`,
        );
        check(unlabelled.length === 0, `fields without a label: ${unlabelled.join(", ")}`);
      },
    );

    await step("moves through the chat with the keyboard in reading order", async () => {
      await page.focus("#user-id");
      const order: string[] = [];
      for (let i = 0; i < 5; i += 1) {
        await page.keyboard.press("Tab");
        order.push(
          await inPage<string>(
            page,
            "document.activeElement.id || document.activeElement.textContent",
          ),
        );
      }
      const expected = ["room-id", "Open room", "log", "message", "send"];
      check(
        order.join(",") === expected.join(","),
        `Tab went ${order.join(" → ")}, expected ${expected.join(" → ")}`,
      );
    });

    await step("shows a character file's validation errors next to the field", async () => {
      // With no agents yet the page opens the form by itself.
      if ((await page.locator("#create-agent[open]").count()) === 0)
        await page.locator("#create-agent summary").click();
      await page.fill(
        "#character",
        JSON.stringify({ bio: "no name", settings: { respond: { mode: "sometimes" } } }),
      );
      await page.click("#create-form button[type=submit]");
      await page.locator("#character-errors li").first().waitFor();
      const errors = await text(page, "#character-errors li");
      check(/name/.test(errors), `the missing name is not reported: ${errors}`);
      check(
        (await page.getAttribute("#character", "aria-invalid")) === "true",
        "the field is not marked invalid",
      );
      await page.fill("#character", "{ not json");
      await page.click("#create-form button[type=submit]");
      await page.locator("#character-errors li", { hasText: "JSON" }).waitFor();
    });

    await step(
      "creates an agent from a pasted character and lists its built-in tools",
      async () => {
        await page.fill("#character", JSON.stringify(CHARACTER, null, 2));
        await page.click("#create-form button[type=submit]");
        // The tools of the agent just selected arrive last.
        await page.locator("#tools-summary", { hasText: "current_time" }).waitFor();
        check(
          (await page.locator("#agent-select").inputValue()) === AGENT_ID,
          `the new agent is not selected: ${await page.locator("#agent-select").inputValue()}`,
        );
        check(
          (await page.locator("#character-errors li").count()) === 0,
          "errors left next to the field",
        );
      },
    );

    await step(
      "sends a message with Enter and shows the reply, the tool call with its arguments and result",
      async () => {
        // Counts each time a streaming reply's text changes: one per delta event rendered.
        await inPage(
          page,
          `window.__deltaRenders = 0;
        new MutationObserver((records) => {
          for (const record of records) if (record.target.classList?.contains("streaming")) window.__deltaRenders += 1;
        }).observe(document.getElementById("log"), { subtree: true, childList: true })`,
        );
        await page.fill("#message", "What time is it in Paris?");
        await page.press("#message", "Enter");
        const reply = page.locator("#log .msg.agent .text:not(.streaming)", {
          hasText: "In Paris it is now",
        });
        await reply.waitFor();
        const tool = page.locator("#log .msg.agent .tool").first();
        check(
          (await tool.locator("summary").textContent())?.includes("current_time"),
          "no current_time tool call shown",
        );
        const pres = await tool.locator("pre").allTextContents();
        check(pres[0]?.includes("Europe/Paris"), `tool arguments not shown: ${pres[0]}`);
        check(pres[1] && pres[1] !== "running…", `tool result not shown: ${pres[1]}`);
        check(
          (await tool.locator("summary .badge", { hasText: "ok" }).count()) === 1,
          "the tool result is not marked ok",
        );
        check(await focused(page, "#message"), "focus did not return to the message field");
        const foot = await page.locator("#log .msg.agent .muted.small").last().textContent();
        check(
          / · (1 model call|([02-9]|\d\d+) model calls) · /.test(foot ?? ""),
          `footer: "${foot}"`,
        );
        deltaRenders = await inPage<number>(page, "window.__deltaRenders ?? 0");
        const memories = page.locator("#log .msg.agent details.memories").first();
        await memories.locator("summary").click();
        memoriesListed = await memories.locator("li").count();
      },
    );

    await step("puts model text on the page as text, never as HTML", async () => {
      const payload = `<img src=x onerror="window.__xss=1"><b>bold</b>`;
      await page.fill("#message", `echo: ${payload}`);
      await page.press("#message", "Enter");
      await page
        .locator("#log .msg.agent .text:not(.streaming)", { hasText: "<b>bold</b>" })
        .waitFor();
      check(
        (await inPage<number | null>(page, "window.__xss ?? null")) === null,
        "an onerror handler from model text ran",
      );
      check((await page.locator("#log b, #log img").count()) === 0, "model text became elements");
    });

    await step("renders a plain JSON answer too, as from a server without streaming", async () => {
      const before = turnContentTypes.length;
      const pattern = "**/agents/*/messages";
      // The same request asking for JSON only: the worker then answers with one JSON body.
      await page.route(pattern, (route) =>
        route.continue({ headers: { ...route.request().headers(), accept: "application/json" } }),
      );
      await page.fill("#message", "echo: answered in one piece");
      await page.press("#message", "Enter");
      const turn = page.locator("#log .msg.agent").last();
      await turn.locator(".text:not(.streaming)", { hasText: "answered in one piece" }).waitFor();
      await turn.locator(".small", { hasText: "completed" }).waitFor();
      // The JSON body lists the memories the turn used, as the stream's event does.
      await turn
        .locator("details.memories:not([hidden]) summary", { hasText: "Memories used" })
        .waitFor();
      await page.unroute(pattern);
      const types = turnContentTypes.splice(before);
      check(
        types.length === 1 && types[0]!.includes("application/json"),
        `the turn was answered as ${types.join(", ")}, not JSON`,
      );
    });

    if (failed === 0) await page.screenshot({ path: `${ARTIFACTS}/playground-chat.png` });
    // Counted before the reload: what the streams showed (the history is checked after it).
    memoriesShown = await page.locator("#log .msg.agent details.memories:not([hidden])").count();

    await step(
      "shows a turn that fails after its stream began as an error in the conversation",
      async () => {
        // The model calls current_time, then refuses the follow-up: the stream's `error` event.
        await page.fill("#message", "What time is it? (then break)");
        await page.press("#message", "Enter");
        const failedTurn = page.locator("#log .msg.agent .text.error", {
          hasText: "The turn failed",
        });
        await failedTurn.waitFor();
        check(
          (await failedTurn.textContent())?.includes("(model)"),
          `the error does not name its code: ${await failedTurn.textContent()}`,
        );
        check(
          (await page
            .locator("#log .msg.agent")
            .last()
            .locator(".tool summary", { hasText: "current_time" })
            .count()) === 1,
          "the tool call before the failure is not shown",
        );
        await page.locator("#send:not([disabled])").waitFor();
      },
    );

    await step(
      "a reply left mid-stream by a reload is still stored and shows in the room's history",
      async () => {
        await page.fill("#message", "Tell me a slow story");
        await page.press("#message", "Enter");
        await page.locator("#log .msg.agent .text.streaming", { hasText: "Once upon" }).waitFor();
        await page.reload();
        await page.locator("#workspace").waitFor({ state: "visible" });
        // The page does not know a turn is still running: the user opens the room again until it shows.
        const stored = page.locator("#log .msg.agent", { hasText: "the end." });
        let shown = false;
        for (let attempt = 0; attempt < 15 && !shown; attempt += 1) {
          if (attempt > 0) await page.click("#room-form button[type=submit]");
          shown = await stored.waitFor({ timeout: 1_000 }).then(
            () => true,
            () => false,
          );
        }
        check(shown, "the interrupted reply never appeared in the room's history");
      },
    );

    await step(
      "reloads the room's history after a page reload, signed in from the tab's storage",
      async () => {
        await page.reload();
        await page.locator("#workspace").waitFor({ state: "visible" });
        await page.locator("#log .msg.user", { hasText: "What time is it in Paris?" }).waitFor();
        const reply = page.locator("#log .msg.agent", { hasText: "In Paris it is now" });
        await reply.waitFor();
        // The reply comes back as the stream ended it: its memories used, and its footer.
        const foot = await reply.locator(".muted.small").last().textContent();
        check(
          /^e2e-model · \d+\+\d+ tokens · ([02-9]|\d\d+) model calls · completed$/.test(foot ?? ""),
          `footer after the reload: "${foot}"`,
        );
        const memories = reply.locator("details.memories:not([hidden])");
        check(
          (await memories.locator("summary").textContent())?.startsWith("Memories used ("),
          "no memories used shown after the reload",
        );
        await memories.locator("summary").click();
        const listed = await memories.locator("li").count();
        check(
          listed === memoriesListed,
          `the reload lists ${listed} memories used, the stream listed ${memoriesListed}`,
        );
        // The turn that failed mid-stream is still shown as its error, after its message.
        const failedTurn = page.locator("#log .msg.user + .msg.agent .text.error", {
          hasText: "The turn failed",
        });
        check(
          (await failedTurn.textContent())?.includes("(model)"),
          `the failed turn after the reload: ${await failedTurn.textContent().catch(() => "none")}`,
        );
      },
    );

    await step(
      "opens the turn inspector on a reply: the prompt's sections with tokens, memories, the tool call, the model calls",
      async () => {
        const reply = page.locator("#log .msg.agent", { hasText: "In Paris it is now" });
        const inspect = reply.locator("button.inspect");
        await inspect.click();
        check((await inspect.getAttribute("aria-expanded")) === "true", "Inspect not expanded");
        const panel = reply.locator(".inspector");
        await panel.locator("h4", { hasText: "Prompt:" }).waitFor();
        // Why the model calls' input is larger than the sections' sum.
        check(
          (await panel
            .locator("p", { hasText: "tool definitions sent for function calling" })
            .count()) === 1,
          "the inspector does not say why the model's input is larger than the prompt",
        );
        const sections = panel.locator(".inspect-sections > li");
        const names = await sections.locator(".inspect-name").allTextContents();
        check(names.includes("character") && names.at(-1) === "message", `sections: ${names}`);
        check(
          (await sections.locator("svg.inspect-bar").count()) === names.length,
          "a section without its bar",
        );
        const figures = await sections.locator(".inspect-figure").allTextContents();
        check(
          figures.every((figure) => /^[\d,]+ tokens?$/.test(figure)),
          `token counts: ${figures}`,
        );
        // The admin token sees the prompt's text: the person's own message is its last section.
        await sections.last().locator("summary").click();
        check(
          (await sections.last().locator("pre").textContent()) === "What time is it in Paris?",
          "the message section's text is not shown",
        );
        check(
          (await panel.locator("h4", { hasText: "Memories used (" }).count()) === 1,
          "no memories heading",
        );
        const tool = panel.locator(".inspect-tool", { hasText: "current_time" });
        check(
          /ok · \d+ ms/.test((await tool.locator(".badge").textContent()) ?? ""),
          "the tool call's duration is not shown",
        );
        await tool.locator("summary").click();
        check(
          (await tool.locator("pre").first().textContent())?.includes("Europe/Paris"),
          "the tool call's arguments are not shown",
        );
        check(
          (await panel.locator("svg.inspect-timeline rect.inspect-call").count()) === 2,
          "the timeline does not show the two model calls",
        );
        check(
          (await panel.locator("svg.inspect-timeline rect.inspect-span-tool").count()) === 1,
          "the timeline does not show the tool call",
        );
        // Its colours are explained, each beside a swatch of the bar it names.
        const legend = await panel.locator(".inspect-legend li").allTextContents();
        check(
          legend.map((text) => text.trim()).join(", ") ===
            "model call, failed model call, tool call",
          `the timeline's legend: ${legend}`,
        );
        await reply.screenshot({ path: `${ARTIFACTS}/playground-inspector.png` });
        // A fresh reply has its Inspect control too (its record lands just after the reply).
        await page.fill("#message", "echo: inspect me");
        await page.press("#message", "Enter");
        const fresh = page.locator("#log .msg.agent", { hasText: "inspect me" }).last();
        await fresh.locator("button.inspect").click();
        await fresh.locator(".inspector h4", { hasText: "Model calls (1)" }).waitFor();
        // The newest reply's panel opened below the conversation's visible part: it was brought
        // into view, not left for the user to find.
        const inView = await page
          .waitForFunction(
            `(() => {
              const panels = document.querySelectorAll("#log .msg.agent .inspector:not([hidden])");
              const panel = panels[panels.length - 1];
              const box = panel && panel.closest(".log").getBoundingClientRect();
              const rect = panel && panel.getBoundingClientRect();
              return !!box && rect.top >= box.top - 1 && rect.top < box.bottom - 40;
            })()`,
            null,
            { timeout: 3_000 },
          )
          .then(() => true)
          .catch(() => false);
        check(inView, "the opened inspector is out of the conversation's view");
        await page.locator("#send:not([disabled])").waitFor();
      },
    );

    await step(
      "shows MCP servers with their state and connects an OAuth one through its consent link",
      async () => {
        for (const server of [
          { name: "plain", url: peers.plainUrl },
          { name: "vault", url: peers.oauthUrl, auth: { type: "oauth" } },
        ]) {
          const added = await worker!.call("POST", `/agents/${AGENT_ID}/tools`, server);
          check(
            added.status === 201,
            `adding ${server.name}: HTTP ${added.status} ${await added.text()}`,
          );
        }
        await page.click("#tools-refresh");
        await page
          .locator("#servers .card", { hasText: "plain" })
          .locator(".badge.state-ready")
          .waitFor();
        const vault = page.locator("#servers .card", { hasText: "vault" });
        await vault.locator(".badge.state-authenticating").waitFor();
        // The peer's authorization server consents at once and redirects to /oauth/callback.
        const consent = page.context().waitForEvent("page");
        await vault.locator("button, a.button", { hasText: "Connect" }).first().click();
        const tab = await consent;
        await tab.waitForLoadState("load");
        await tab.close();
        await page.click("#tools-refresh");
        await vault.locator(".badge.state-ready").waitFor();
        await page.locator("#tools-summary", { hasText: "plain__echo" }).waitFor();
      },
    );

    await step(
      "adds an MCP server from the form, explains a refused one, and removes it on a second click",
      async () => {
        await page.locator("#add-server summary").click();
        await page.fill("#server-name", "echo2");
        await page.fill("#server-url", "ftp://example.com/mcp");
        await page.click("#server-form button[type=submit]");
        await page.locator("#server-errors li", { hasText: "must be an http(s) URL" }).waitFor();
        await page.fill("#server-url", peers.plainUrl);
        await page.click("#server-form button[type=submit]");
        const card = page.locator("#servers .card", { hasText: "echo2" });
        await card.locator(".badge.state-ready").waitFor();
        await page.locator("#tools-summary", { hasText: "echo2__echo" }).waitFor();
        const remove = card.locator("button.card-action");
        await remove.click();
        await card.locator("button.card-action", { hasText: "Really remove?" }).waitFor();
        check((await card.count()) === 1, "one click already removed the server");
        await remove.click();
        await card.waitFor({ state: "detached" });
        check(
          !((await page.locator("#tools-summary").textContent()) ?? "").includes("echo2__"),
          "the removed server's tools are still listed",
        );
      },
    );

    await step("searches and browses the agent's memories", async () => {
      await page.fill("#memory-query", "tomatoes balcony");
      await page.press("#memory-query", "Enter");
      const hit = page.locator("#memories .card", { hasText: "Ada grows tomatoes" });
      await hit.waitFor();
      check((await hit.textContent())?.includes("score"), "a search hit shows no score");
      await page.selectOption("#memory-type", "message");
      await page.click("#browse-form button[type=submit]");
      await page.locator("#memories .card", { hasText: "What time is it in Paris?" }).waitFor();
      await page.screenshot({ path: `${ARTIFACTS}/playground-desktop.png`, fullPage: true });
      // The skills panel sits under the servers in the first column, not in a row of its own.
      const tools = await page.locator("#tools-panel").boundingBox();
      const skills = await page.locator("#skills-panel").boundingBox();
      const chat = await page.locator("#chat-panel").boundingBox();
      check(
        tools &&
          skills &&
          chat &&
          skills.x === tools.x &&
          skills.y > tools.y &&
          skills.y < chat.y + chat.height,
        `the skills panel is not under the servers beside the chat: ${JSON.stringify({ tools, skills, chat })}`,
      );
    });

    await step("forgets one memory on a second click, and search no longer finds it", async () => {
      await page.selectOption("#memory-type", "");
      await page.fill("#memory-query", "tomatoes balcony");
      await page.press("#memory-query", "Enter");
      const card = page.locator("#memories .card", { hasText: "Ada grows tomatoes" });
      await card.waitFor();
      const forget = card.locator("button.forget");
      await forget.click();
      await card.locator("button.forget", { hasText: "Really forget?" }).waitFor();
      check((await card.count()) === 1, "one click already deleted the memory");
      await forget.click();
      await card.waitFor({ state: "detached" });
      await page.locator("#memory-status", { hasText: "Forgot 1 memory" }).waitFor();
      await page.press("#memory-query", "Enter");
      await page.locator("#memory-status", { hasText: "found for" }).waitFor();
      check(
        (await page.locator("#memories .card", { hasText: "Ada grows tomatoes" }).count()) === 0,
        "the forgotten memory is still found",
      );
    });

    await step(
      "adds a skill, shows its body on demand, and deletes it on a second click",
      async () => {
        await page.click("#add-skill summary");
        await page.fill("#skill-name", "Bad Name");
        await page.fill("#skill-description", "Water the basil.");
        await page.fill("#skill-body", "1. Check the soil.\n2. Water if dry.");
        // The browser's own check first: the name's pattern stops the form before any request.
        await page.click("#skill-form button[type=submit]");
        check(
          (await page.locator("#skills .card").count()) === 0,
          "a skill with an invalid name was saved",
        );
        await page.fill("#skill-name", "water-basil");
        await page.click("#skill-form button[type=submit]");
        const card = page.locator("#skills .card", { hasText: "water-basil" });
        await card.waitFor();
        check((await card.textContent())?.includes("Water the basil."), "no description shown");
        await card.locator("button", { hasText: "Show" }).click();
        await card.locator("pre", { hasText: "Check the soil." }).waitFor();
        await page.locator("#proposals li", { hasText: "Nothing waits for an answer." }).waitFor();
        const remove = card.locator("button.card-action");
        await remove.click();
        await card.locator("button.card-action", { hasText: "Really delete?" }).waitFor();
        await remove.click();
        await card.waitFor({ state: "detached" });
        await page
          .locator("#skills-status", { hasText: "Deleted the skill water-basil" })
          .waitFor();
      },
    );

    await step(
      "shows a skill the agent proposed in a chat turn, and saves it on Approve",
      async () => {
        await page.fill("#message", "Keep this as a skill, please.");
        await page.press("#message", "Enter");
        await page
          .locator("#log .msg.agent .tool summary", { hasText: "save_skill" })
          .first()
          .waitFor();
        // The turn is over (the proposal never pauses it) once Send is enabled again.
        await page.locator("#send:enabled").waitFor();
        await page.click("#skills-refresh");
        const proposal = page.locator("#proposals .card", { hasText: "greet-warmly" });
        await proposal.waitFor();
        check(
          (await proposal.textContent())?.includes("Offer help."),
          "the proposed procedure is not shown",
        );
        check(
          (await page.locator("#skills .card", { hasText: "greet-warmly" }).count()) === 0,
          "the skill was saved before anyone approved it",
        );
        await proposal.locator("button", { hasText: "Approve" }).click();
        await page.locator("#skills .card", { hasText: "greet-warmly" }).waitFor();
        await page.locator("#skills-status", { hasText: "Approved" }).waitFor();
        await page.locator("#proposals li", { hasText: "Nothing waits for an answer." }).waitFor();
      },
    );

    await step(
      "shows the turns in the Usage panel: a bar for today, the user who chatted, the tool called",
      async () => {
        // A turn for another user, with nothing but the priced model in it: its row has a cost.
        const other = await worker!.call("POST", `/agents/${AGENT_ID}/messages`, {
          userId: "gardener",
          text: "echo: the basil needs water",
        });
        check(other.status === 200, `a turn for another user: HTTP ${other.status}`);
        const people = page.locator("#usage-top table", { hasText: "Top people" });
        const gardener = people.locator("tr", { hasText: "gardener" });
        // Its usage record is written after the reply: refresh until it is counted (at most ~10 s).
        for (let attempt = 0; attempt < 40 && (await gardener.count()) === 0; attempt += 1) {
          if (attempt > 0) await page.waitForTimeout(250);
          await page.click("#usage-refresh");
          await page.locator("#usage-status:empty").waitFor({ state: "attached" });
        }
        check(
          (await gardener.count()) === 1,
          "the other user's turn never showed among the people",
        );
        const today = new Date().toISOString().slice(0, 10);
        const bar = page.locator(`#usage-chart g[data-day="${today}"]`);
        await bar.waitFor();
        const height = Number(await bar.locator("rect.usage-input").getAttribute("height"));
        check(height > 0, `today's bar has no input tokens drawn (height ${height})`);
        const title = (await bar.locator("title").textContent()) ?? "";
        check(
          /input \+ [\d,.\s]+ output tokens, [\d,.\s]+ turns, /.test(title),
          `today's bar tooltip does not give the day's figures: "${title}"`,
        );
        // The days of the range with no turns are drawn too, as zero.
        check(
          (await page.locator("#usage-chart g.usage-day").count()) === 30,
          "the chart does not show 30 days",
        );
        await people.locator("td", { hasText: "playground" }).first().waitFor();
        // The failed turn's tokens have no model to price them by: that user's row has no cost.
        check(
          /\$0\.\d+/.test((await gardener.textContent()) ?? ""),
          `no cost for the priced user's row: "${await gardener.textContent()}"`,
        );
        const servers = page.locator("#usage-top table", { hasText: "Top servers" });
        await servers.locator("td", { hasText: "no server (REST, tasks)" }).waitFor();
        const tools = page.locator("#usage-top table", { hasText: "Top tools" });
        await tools.locator("td", { hasText: "current_time" }).waitFor();
        // The chart has `count` days once its last is there and none after it.
        const bars = page.locator("#usage-chart g.usage-day");
        const days = async (count: number) => {
          await bars.nth(count - 1).waitFor({ state: "attached" });
          await bars.nth(count).waitFor({ state: "detached" });
        };
        await page.selectOption("#usage-range", "7");
        await days(7);
        await page.selectOption("#usage-range", "30");
        await days(30);
      },
    );

    await step("fits a 390 px phone screen without sideways scrolling", async () => {
      await page.setViewportSize(PHONE);
      const overflow = await inPage<number>(
        page,
        "document.documentElement.scrollWidth - window.innerWidth",
      );
      check(overflow <= 0, `the page is ${overflow}px wider than the screen`);
      const tops = await Promise.all(
        ["#agent-panel", "#chat-panel", "#memory-panel", "#tools-panel"].map(
          async (id) => (await page.locator(id).boundingBox())?.y ?? -1,
        ),
      );
      check(
        tops.every((top, i) => i === 0 || top > tops[i - 1]!),
        `panels are not in one column in reading order: ${tops.join(", ")}`,
      );
      await page.screenshot({ path: `${ARTIFACTS}/playground-phone.png`, fullPage: true });
      await page.setViewportSize(DESKTOP);
    });

    await step("deletes an agent only once its id is typed, and lists it no more", async () => {
      const created = await worker!.call("POST", "/agents", {
        id: "doomed-e2e",
        name: "Doomed",
        bio: ["Short-lived."],
      });
      check(created.status === 201, `creating the agent to delete: HTTP ${created.status}`);
      await page.click("#agents-refresh");
      await page.locator("#agent-select option[value='doomed-e2e']").waitFor({ state: "attached" });
      await page.selectOption("#agent-select", "doomed-e2e");
      await page.locator("#delete-agent summary").click();
      await page.fill("#delete-confirm", "doomed");
      await page.click("#delete-form button[type=submit]");
      await page.locator("#delete-status", { hasText: "Type doomed-e2e exactly" }).waitFor();
      check(
        (await worker!.call("GET", "/agents/doomed-e2e")).status === 200,
        "the agent was deleted without its id typed",
      );
      await page.fill("#delete-confirm", "doomed-e2e");
      await page.click("#delete-form button[type=submit]");
      await page.locator("#agent-status", { hasText: "Deleted agent doomed-e2e" }).waitFor();
      check(
        (await page.locator("#agent-select option[value='doomed-e2e']").count()) === 0,
        "the deleted agent is still listed",
      );
      check(
        (await worker!.call("GET", "/agents/doomed-e2e")).status === 404,
        "the agent still exists",
      );
      await page.selectOption("#agent-select", AGENT_ID);
    });

    await step("says when memory steps fail today although the replies still come", async () => {
      const created = await worker!.call("POST", "/agents", {
        id: "forgetful-e2e",
        name: "Forgetful",
        bio: ["Answers, but remembers nothing."],
        settings: { memory: { factsEvery: 1 } },
      });
      check(created.status === 201, `creating the forgetful agent: HTTP ${created.status}`);
      await page.click("#agents-refresh");
      await page
        .locator("#agent-select option[value='forgetful-e2e']")
        .waitFor({ state: "attached" });
      await page.selectOption("#agent-select", "forgetful-e2e");
      // The endpoint refuses fact extraction, as one that does not serve SMALL_MODEL would.
      model.failSideTasks(404);
      await page.fill("#message", "echo: noted");
      await page.press("#message", "Enter");
      await page.locator("#log .msg.agent .text:not(.streaming)", { hasText: "noted" }).waitFor();
      const warning = page.locator("#memory-warning", { hasText: "failed today" });
      await warning.waitFor({ timeout: 10_000 });
      check(
        (await warning.textContent())?.includes("SMALL_MODEL"),
        `the warning does not say where to look: ${await warning.textContent()}`,
      );
      // The cause, from /health: the endpoint's 404 reads as an unknown model.
      check(
        (await warning.textContent())?.includes("unknown model"),
        `the warning does not name the cause: ${await warning.textContent()}`,
      );
      model.failSideTasks(null);
      await page.selectOption("#agent-select", AGENT_ID);
    });

    await step("says in words when a token lacks the scope for an action", async () => {
      const minted = await worker!.call("POST", "/auth/tokens", {
        name: "e2e-reader",
        scopes: ["agents:read"],
        expiresInSeconds: 600,
      });
      check(minted.status === 201, `minting a read-only token: HTTP ${minted.status}`);
      const { token: reader } = (await minted.json()) as { token: string };
      const tab = await context.newPage();
      await tab.goto(base);
      await tab.evaluate("sessionStorage.clear()");
      await tab.reload();
      await tab.fill("#token", reader);
      await tab.press("#token", "Enter");
      await tab.locator("#signed-in").waitFor();
      if ((await tab.locator("#create-agent[open]").count()) === 0)
        await tab.locator("#create-agent summary").click();
      await tab.fill("#character", JSON.stringify({ name: "Nope", bio: ["Never created."] }));
      await tab.click("#create-form button[type=submit]");
      const refusal = tab.locator("#character-errors li", { hasText: "may not do that" });
      await refusal.waitFor();
      check(
        (await refusal.textContent())?.includes("agents:write"),
        `the refusal does not name the missing scope: ${await refusal.textContent()}`,
      );
      check(!(await tab.content()).includes(reader), "the token is rendered on the page");
      await tab.close();
    });

    await step(
      "says the Usage panel needs agents:read when the token lacks it, and the chat still works",
      async () => {
        const minted = await worker!.call("POST", "/auth/tokens", {
          name: "e2e-chatter",
          scopes: ["messages:write"],
          expiresInSeconds: 600,
        });
        check(minted.status === 201, `minting a chat-only token: HTTP ${minted.status}`);
        const { token: chatter } = (await minted.json()) as { token: string };
        const tab = await context.newPage();
        tab.on("pageerror", (error) => pageErrors.push(error.message));
        await tab.goto(base);
        await tab.evaluate("sessionStorage.clear()");
        await tab.reload();
        // Listing the agents needs agents:read too: alone, this token stops at the sign-in.
        await tab.fill("#token", chatter);
        await tab.press("#token", "Enter");
        await tab.locator("#token-status", { hasText: "agents:read" }).waitFor();
        // Here the test answers the agent list with the admin token (the page cannot get it with
        // this one); every other request, the usage ones among them, carries the chat-only token.
        await tab.route(/\/agents\?limit=/, (route) =>
          route.continue({
            headers: { ...route.request().headers(), authorization: `Bearer ${token}` },
          }),
        );
        await tab.fill("#token", chatter);
        await tab.press("#token", "Enter");
        await tab.locator("#signed-in").waitFor();
        const refusal = tab.locator("#usage-status", { hasText: "may not do that" });
        await refusal.waitFor();
        check(
          (await refusal.textContent())?.includes("needs the agents:read scope"),
          `the refusal does not name the scope it needs: ${await refusal.textContent()}`,
        );
        check((await tab.locator("#usage-chart svg").count()) === 0, "a chart drawn anyway");
        await tab.fill("#message", "echo: still chatting");
        await tab.press("#message", "Enter");
        await tab
          .locator("#log .msg.agent .text:not(.streaming)", { hasText: "still chatting" })
          .waitFor();
        check(!(await tab.content()).includes(chatter), "the token is rendered on the page");
        await tab.close();
      },
    );

    await step(
      "renders /openapi.json at /docs with Swagger UI from the worker itself",
      async () => {
        const docs = await context.newPage();
        await docs.goto(`${base}/docs`);
        await docs.locator(".swagger-ui .opblock").nth(10).waitFor();
        check(
          (await docs
            .locator(".swagger-ui .opblock-summary-path", { hasText: "/agents/{agentId}/messages" })
            .count()) > 0,
          "the messages operation is missing",
        );
        await docs.screenshot({ path: `${ARTIFACTS}/docs.png` });
        await docs.close();
      },
    );

    await step("loaded nothing from other hosts and raised no script errors", async () => {
      check(foreign.length === 0, `requests to other hosts: ${foreign.join(", ")}`);
      check(pageErrors.length === 0, `page errors: ${pageErrors.join("; ")}`);
    });

    await step(
      "streamed every reply as server-sent events and showed the memories each turn used",
      async () => {
        check(turnContentTypes.length >= 2, `only ${turnContentTypes.length} turns seen`);
        const notStreamed = turnContentTypes.filter((type) => !type.includes("text/event-stream"));
        check(
          notStreamed.length === 0,
          `turns answered as ${notStreamed.join(", ")}, not streamed (the page rendered them from JSON)`,
        );
        check(
          memoriesShown >= 2,
          `memories used were shown for ${memoriesShown} of ${turnContentTypes.length} turns`,
        );
        check(
          memoriesListed >= 1,
          "the first turn listed no memory (the agent's lore should be retrieved)",
        );
        // The stand-in streams the answer a word at a time, 15 ms apart: the page showed it growing.
        check(
          deltaRenders >= 5,
          `the reply was rendered ${deltaRenders} times while streaming, not word by word`,
        );
      },
    );
  } catch (error) {
    failed += 1;
    console.log(`  FAIL  setup: ${error instanceof Error ? error.stack : String(error)}`);
  } finally {
    await browser?.close();
    await worker?.stop();
    await peers.close();
    await model.close();
  }
}

console.log("\nplayground end-to-end (headless Chromium)");
await main();
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
