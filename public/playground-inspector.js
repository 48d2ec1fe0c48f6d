// The playground's turn inspector (docs/observability.md#turn-inspector): an "Inspect" control on
// each agent reply that opens what the turn kept, from GET /agents/:id/turns/:turnId: the prompt's
// sections with their token counts as bars, the memories used and which search found them, the
// tool calls with durations and results, and the model and tool calls on a timeline. Bars are SVG
// drawn with DOM calls (the page's CSP allows no inline style); server text goes on as text only.

const SVG_NS = "http://www.w3.org/2000/svg";
/** The record is written just after the reply: a fresh reply's may not be there yet. */
const RETRIES = 4;
const RETRY_MS = 600;
const LEGS = { text: "full-text", vector: "vector", neighbour: "next to a hit" };

function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** A horizontal bar, `share` of the width (0..1), sized by the stylesheet. */
function bar(share, label) {
  const width = `${Math.max(0.5, Math.min(100, share * 100)).toFixed(2)}%`;
  return svg(
    "svg",
    { class: "inspect-bar", role: "img", "aria-label": label, preserveAspectRatio: "none" },
    svg("rect", { class: "inspect-bar-track", x: 0, y: 0, width: "100%", height: "100%" }),
    svg("rect", { class: "inspect-bar-fill", x: 0, y: 0, width, height: "100%" }),
  );
}

const tokensText = (count) => `${count.toLocaleString()} token${count === 1 ? "" : "s"}`;

function pretty(value) {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2) ?? String(value);
}

/**
 * @param {{ el: Function, api: Function, explain: Function, agentPath: (suffix?: string) => string }} page
 */
export function turnInspector(page) {
  const { el, api, explain, agentPath } = page;

  function sections(turn) {
    const total = turn.sections.reduce((sum, section) => sum + section.tokens, 0);
    const rows = turn.sections.map((section) => {
      const line = el(
        "span",
        { class: "inspect-row" },
        el("span", { class: "inspect-name", text: section.name }),
        bar(
          total > 0 ? section.tokens / total : 0,
          `${section.name}: ${tokensText(section.tokens)}`,
        ),
        el("span", { class: "inspect-figure", text: tokensText(section.tokens) }),
      );
      if (typeof section.text !== "string") return el("li", {}, line);
      return el(
        "li",
        {},
        el(
          "details",
          {},
          el("summary", {}, line),
          el("pre", { class: "small", text: section.text }),
        ),
      );
    });
    return [
      el("h4", { text: `Prompt: ${tokensText(total)}` }),
      // The model calls below count more input than the sections: say why, once.
      el("p", {
        class: "muted small",
        text: "The model calls' input counts more: the tool definitions sent for function calling, and a few tokens of framing per message.",
      }),
      turn.resumed
        ? el("p", {
            class: "muted small",
            text: "Resumed after an approval: the prompt was composed before the pause and is not kept.",
          })
        : null,
      el("ol", { class: "inspect-list inspect-sections" }, ...rows),
    ];
  }

  function memories(turn) {
    if (!Array.isArray(turn.memories))
      return [
        el("h4", { text: "Memories" }),
        el("p", {
          class: "muted small",
          text: "Seeing the memories needs the memories:read scope.",
        }),
      ];
    return [
      el("h4", { text: `Memories used (${turn.memories.length})` }),
      turn.memories.length === 0
        ? el("p", { class: "muted small", text: "None." })
        : el(
            "ol",
            { class: "inspect-list small" },
            ...turn.memories.map((m) =>
              el(
                "li",
                { class: "inspect-memory" },
                el("span", { class: "badge", text: m.type }),
                el("span", {
                  class: "muted",
                  text: ` ${m.provider} · ${
                    m.matchedBy
                      ? `found by ${m.matchedBy.map((leg) => LEGS[leg] ?? leg).join(" + ")}`
                      : "known about the person"
                  }${typeof m.score === "number" ? ` · score ${m.score.toFixed(3)}` : ""}`,
                }),
                el("div", { text: m.text }),
              ),
            ),
          ),
    ];
  }

  function tools(turn) {
    if (turn.tools.length === 0) return [];
    return [
      el("h4", { text: `Tool calls (${turn.tools.length})` }),
      el(
        "ol",
        { class: "inspect-list small" },
        ...turn.tools.map((call) =>
          el(
            "li",
            { class: "inspect-tool" },
            el("strong", { text: call.name }),
            el("span", {
              class: `badge ${call.ok ? "state-ready" : "state-failed"}`,
              text: `${call.ok ? "ok" : "failed"} · ${call.durationMs} ms${call.cached ? " · cached" : ""}`,
            }),
            typeof call.startMs === "number"
              ? el("span", { class: "muted", text: `at ${call.startMs} ms` })
              : null,
            "arguments" in call
              ? el(
                  "details",
                  {},
                  el("summary", { text: "arguments and result" }),
                  el("pre", { text: pretty(call.arguments) }),
                  el("pre", { text: pretty(call.output ?? "") }),
                )
              : null,
          ),
        ),
      ),
    ];
  }

  /**
   * Each model request and tool call as a bar from its start to its end, over the turn's duration,
   * one row each in the order they started (tools in their own colour).
   */
  function timeline(turn) {
    if (turn.modelCalls.length === 0) return [];
    const spans = [
      ...turn.modelCalls.map((call) => ({
        kind: call.error ? "inspect-call failed" : "inspect-call",
        label: call.model,
        startMs: call.startMs,
        durationMs: call.durationMs,
      })),
      ...turn.tools
        .filter((call) => typeof call.startMs === "number")
        .map((call) => ({
          kind: "inspect-span-tool",
          label: call.name,
          startMs: call.startMs,
          durationMs: call.durationMs,
        })),
    ].sort((a, b) => a.startMs - b.startMs);
    const span = Math.max(1, turn.durationMs, ...spans.map((s) => s.startMs + s.durationMs));
    const rowHeight = 18;
    const height = rowHeight * spans.length;
    const picture = svg("svg", {
      class: "inspect-timeline",
      viewBox: `0 0 1000 ${height}`,
      preserveAspectRatio: "none",
      height,
      role: "img",
      "aria-label": `Model and tool calls over the turn's ${span} ms`,
    });
    spans.forEach((s, i) => {
      picture.append(
        svg(
          "rect",
          {
            class: s.kind,
            x: (s.startMs / span) * 1000,
            y: i * rowHeight + 3,
            width: Math.max(3, (s.durationMs / span) * 1000),
            height: rowHeight - 6,
          },
          svg("title", {}, `${s.label}: ${s.startMs}-${s.startMs + s.durationMs} ms`),
        ),
      );
    });
    const rows = turn.modelCalls.map((call) =>
      el("li", {
        text: `${call.responseModel ?? call.model} · starts at ${call.startMs} ms · ${call.durationMs} ms · ${call.inputTokens}+${call.outputTokens} tokens · ${call.error ? `failed: ${call.error}` : (call.finishReason ?? "no finish reason")}`,
      }),
    );
    return [
      el("h4", { text: `Model calls (${turn.modelCalls.length}) over ${span} ms` }),
      picture,
      legend(),
      el("ol", { class: "inspect-list small" }, ...rows),
    ];
  }

  /** What the timeline's colours mean, each as a swatch of the bar's own class. */
  function legend() {
    const entry = (kind, text) =>
      el(
        "li",
        {},
        svg(
          "svg",
          {
            class: "inspect-swatch",
            viewBox: "0 0 12 12",
            width: 12,
            height: 12,
            "aria-hidden": "true",
          },
          svg("rect", { class: kind, x: 0, y: 0, width: 12, height: 12 }),
        ),
        ` ${text}`,
      );
    return el(
      "ul",
      { class: "inspect-legend small muted" },
      entry("inspect-call", "model call"),
      entry("inspect-call failed", "failed model call"),
      entry("inspect-span-tool", "tool call"),
    );
  }

  function render(turn) {
    return [
      ...sections(turn),
      turn.content
        ? null
        : el("p", {
            class: "muted small",
            text: "The prompt's text and the tools' arguments and results need a token without a user prefix.",
          }),
      ...memories(turn),
      ...tools(turn),
      ...timeline(turn),
    ];
  }

  async function load(turnId, fresh) {
    const path = agentPath(`/turns/${encodeURIComponent(turnId)}`);
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await api("GET", path);
      } catch (error) {
        if (!fresh || error?.status !== 404 || attempt >= RETRIES) throw error;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }

  /**
   * The panel opens below its reply, often past the bottom of the conversation's scrolling box (the
   * last reply's always did): when it is not wholly in view, the box scrolls the control to its top,
   * so the panel follows it on screen, and stays there while the reply's last events arrive.
   */
  function reveal(button, panel) {
    const box = panel.closest(".log");
    if (!box) return;
    // The conversation stops following new events until the reader scrolls back to its end.
    box.dataset.pinned = "inspector";
    const shown = box.getBoundingClientRect();
    const rect = panel.getBoundingClientRect();
    if (rect.top >= shown.top && rect.bottom <= shown.bottom) return;
    // Within the box only (the page stays put), and at once: a smooth scroll still under way when
    // the reply's last events grew the log ended short of the control.
    box.scrollTop += button.getBoundingClientRect().top - shown.top - 8;
  }

  /** The "Inspect" control for one reply, and the panel it opens below it. */
  function control(turnId, { fresh = false } = {}) {
    const panel = el("div", { class: "inspector", hidden: true, "aria-live": "polite" });
    let loaded = false;
    const button = el("button", {
      type: "button",
      class: "secondary small inspect",
      text: "Inspect",
      "aria-expanded": "false",
      onclick: async () => {
        const open = panel.hidden;
        panel.hidden = !open;
        button.setAttribute("aria-expanded", String(open));
        button.textContent = open ? "Close inspector" : "Inspect";
        if (!open) return;
        if (loaded) return reveal(button, panel);
        panel.replaceChildren(el("p", { class: "muted small", text: "Loading the turn…" }));
        reveal(button, panel);
        try {
          const turn = await load(turnId, fresh);
          loaded = true;
          panel.replaceChildren(...render(turn).filter(Boolean));
          reveal(button, panel);
        } catch (error) {
          const needs =
            error?.status === 403
              ? "The inspector needs the agents:read scope for this agent. "
              : "";
          panel.replaceChildren(
            el("p", { class: "error small", text: `${needs}${explain(error)}` }),
          );
        }
      },
    });
    return { button, panel };
  }

  return { control };
}
