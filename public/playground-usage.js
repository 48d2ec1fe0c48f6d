// The playground's "Usage" panel (docs/observability.md): the selected agent's tokens per UTC day
// as an inline SVG chart, and its top people, servers and tools, from GET /agents/:id/usage. The
// chart is built with DOM calls and styled by class only (the page's CSP allows no inline style and
// no library). playground.js hands it its helpers; server text goes on the page as text only.

const SVG_NS = "http://www.w3.org/2000/svg";
const DAY_MS = 86_400_000;
const TOP_ROWS = 5;
const CHART_HEIGHT_PX = 190;
const MARGIN_PX = { top: 10, right: 6, bottom: 22, left: 46 };
/** The room one day's label takes: fewer labels on a narrow chart, so they never overlap. */
const LABEL_WIDTH_PX = 50;
const NULL_KEY = {
  user: "no user (captions)",
  guild: "no server (REST, tasks)",
  tool: "(unnamed)",
};

/** An SVG element; strings become text nodes, as with the page's `el()`. */
function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** The `count` UTC days up to today, oldest first: the API counts its days in UTC. */
function utcDays(count, now = Date.now()) {
  const today = now - (now % DAY_MS);
  return Array.from({ length: count }, (_, i) =>
    new Date(today - (count - 1 - i) * DAY_MS).toISOString().slice(0, 10),
  );
}

const exact = (value) => value.toLocaleString();
/** "1 tool call", "3 tool calls". */
const counted = (value, noun) => `${exact(value)} ${noun}${value === 1 ? "" : "s"}`;
const compact = (value) =>
  value.toLocaleString(undefined, { notation: "compact", maximumFractionDigits: 1 });
const dollars = (value) => `$${value < 0.01 && value > 0 ? value.toFixed(4) : value.toFixed(2)}`;
const tokensOf = (row) => (row ? row.inputTokens + row.outputTokens : 0);
const dayLabel = (day) =>
  new Date(`${day}T00:00:00Z`).toLocaleDateString(undefined, {
    month: "short",
    day: "numeric",
    timeZone: "UTC",
  });

/** A round step for the y axis (1, 2 or 5 times a power of ten) so that four steps reach `peak`. */
function axisStep(peak) {
  const rough = Math.max(1, peak / 4);
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((m) => m * magnitude).find((step) => step >= rough);
}

/** What a bar's tooltip says: the day's exact figures, and its cost when the row carries one. */
function dayTitle(day, row) {
  if (!row) return `${day}: no usage`;
  const parts = [
    `${exact(row.inputTokens)} input + ${exact(row.outputTokens)} output tokens`,
    counted(row.turns, "turn"),
    counted(row.modelCalls, "model call"),
    counted(row.toolCalls, "tool call"),
    counted(row.errors, "error"),
  ];
  if (row.costUsd !== undefined) parts.push(`about ${dollars(row.costUsd)}`);
  return `${day}: ${parts.join(", ")}`;
}

/** Tokens per day, input below output, at `width` px: one SVG unit is one pixel. */
function chart(days, rows, width) {
  const byDay = new Map(rows.map((row) => [row.key, row]));
  const plotWidth = width - MARGIN_PX.left - MARGIN_PX.right;
  const plotHeight = CHART_HEIGHT_PX - MARGIN_PX.top - MARGIN_PX.bottom;
  const bottom = MARGIN_PX.top + plotHeight;
  const peak = Math.max(0, ...days.map((day) => tokensOf(byDay.get(day))));
  const step = axisStep(peak);
  const top = step * 4;
  // A day with a few tokens beside a day with millions still shows a sliver.
  const height = (tokens) => (tokens > 0 ? Math.max(1, (tokens / top) * plotHeight) : 0);
  const total = days.reduce((sum, day) => sum + tokensOf(byDay.get(day)), 0);
  const busiest = days.find((day) => tokensOf(byDay.get(day)) === peak);
  const picture = svg("svg", {
    class: "usage-svg",
    width,
    height: CHART_HEIGHT_PX,
    viewBox: `0 0 ${width} ${CHART_HEIGHT_PX}`,
    role: "img",
    "aria-label": `Tokens per UTC day, ${days[0]} to ${days.at(-1)}: ${exact(total)} in all${peak > 0 ? `, the most on ${busiest} (${exact(peak)})` : ""}.`,
  });
  for (let i = 0; i <= 4; i += 1) {
    const y = bottom - (i / 4) * plotHeight;
    picture.append(
      svg("line", {
        class: "usage-grid",
        x1: MARGIN_PX.left,
        x2: width - MARGIN_PX.right,
        y1: y,
        y2: y,
      }),
      svg("text", { x: MARGIN_PX.left - 6, y: y + 4, "text-anchor": "end" }, compact(step * i)),
    );
  }
  const slot = plotWidth / days.length;
  const barWidth = Math.max(1, slot * 0.72);
  const labelEvery = Math.ceil(LABEL_WIDTH_PX / slot);
  days.forEach((day, i) => {
    const row = byDay.get(day);
    const input = height(row?.inputTokens ?? 0);
    const output = height(tokensOf(row)) - input;
    const x = MARGIN_PX.left + i * slot + (slot - barWidth) / 2;
    picture.append(
      svg(
        "g",
        { class: "usage-day", "data-day": day },
        svg("title", {}, dayTitle(day, row)),
        // The whole column answers the pointer, so an empty day has its tooltip too.
        svg("rect", {
          class: "usage-hit",
          x: MARGIN_PX.left + i * slot,
          y: MARGIN_PX.top,
          width: slot,
          height: plotHeight,
        }),
        svg("rect", { class: "usage-input", x, y: bottom - input, width: barWidth, height: input }),
        svg("rect", {
          class: "usage-output",
          x,
          y: bottom - input - Math.max(0, output),
          width: barWidth,
          height: Math.max(0, output),
        }),
      ),
    );
    // Counted back from today, so the newest day is always labelled; centred under its bar unless
    // that would run past the right edge, then ending at the edge.
    if ((days.length - 1 - i) % labelEvery === 0) {
      const centre = MARGIN_PX.left + (i + 0.5) * slot;
      const fits = centre + LABEL_WIDTH_PX / 2 <= width;
      picture.append(
        svg(
          "text",
          {
            x: fits ? centre : width - 1,
            y: CHART_HEIGHT_PX - 6,
            "text-anchor": fits ? "middle" : "end",
          },
          dayLabel(day),
        ),
      );
    }
  });
  return picture;
}

/**
 * @param {{
 *   $: (id: string) => HTMLElement, el: Function, api: Function, explain: Function,
 *   setStatus: Function, agentPath: (suffix?: string) => string, currentAgent: () => string,
 * }} page
 */
export function usagePanel(page) {
  const { $, el, api, explain, setStatus, agentPath, currentAgent } = page;
  const status = (message, kind) => setStatus("usage-status", message, kind);
  /** Bumped by each load and clear: an answer for an older range or agent is dropped. */
  let generation = 0;
  /** What the chart shows, kept to redraw it at a new width. */
  let shown = null;
  let drawnWidth = 0;

  function draw() {
    const box = $("usage-chart");
    const width = Math.floor(box.clientWidth);
    if (!shown || width < 120) return; // hidden (signed out) or not laid out yet
    drawnWidth = width;
    box.replaceChildren(chart(shown.days, shown.rows, width));
  }
  new ResizeObserver(() => {
    if (Math.floor($("usage-chart").clientWidth) !== drawnWidth) draw();
  }).observe($("usage-chart"));

  function table(caption, by, rows) {
    const tools = by === "tool";
    const priced = !tools && rows.some((row) => row.costUsd !== undefined);
    // Tokens are not split between the tools a turn called, so the tools table has none.
    const heads = tools
      ? ["tool", "calls", "turns", "failed"]
      : [by === "user" ? "person" : "server", "turns", "tokens", "tool calls", "errors"];
    if (priced) heads.push("cost");
    const cells = (row) => {
      const name = el("td", { text: row.key ?? NULL_KEY[by] });
      if (row.key === null) name.className = "muted";
      if (tools) return [name, exact(row.toolCalls), exact(row.turns), exact(row.errors)];
      const tokens = el("td", {
        text: compact(tokensOf(row)),
        title: `${exact(row.inputTokens)} input + ${exact(row.outputTokens)} output tokens`,
      });
      const line = [name, exact(row.turns), tokens, exact(row.toolCalls), exact(row.errors)];
      if (priced) line.push(row.costUsd === undefined ? "no price" : dollars(row.costUsd));
      return line;
    };
    return el(
      "div",
      { class: "usage-table" },
      el(
        "table",
        {},
        el("caption", { text: caption }),
        el(
          "thead",
          {},
          el("tr", {}, ...heads.map((head) => el("th", { scope: "col", text: head }))),
        ),
        el(
          "tbody",
          {},
          ...(rows.length === 0
            ? [el("tr", {}, el("td", { colspan: heads.length, class: "muted", text: "None." }))]
            : rows.map((row) =>
                el(
                  "tr",
                  {},
                  ...cells(row).map((cell) =>
                    typeof cell === "string" ? el("td", { text: cell }) : cell,
                  ),
                ),
              )),
        ),
      ),
    );
  }

  function summary(days, rows) {
    const sum = (pick) => rows.reduce((total, row) => total + pick(row), 0);
    const input = sum((row) => row.inputTokens);
    const output = sum((row) => row.outputTokens);
    const priced = rows.length > 0 && rows.every((row) => row.costUsd !== undefined);
    return `${days[0]} to ${days.at(-1)} (UTC): ${exact(input + output)} tokens (${exact(input)} input, ${exact(output)} output) in ${counted(
      sum((row) => row.turns),
      "turn",
    )}, ${exact(sum((row) => row.errors))} failed${priced ? `; about ${dollars(sum((row) => row.costUsd))}` : ""}.`;
  }

  async function load() {
    const agentId = currentAgent();
    if (!agentId) return;
    const mine = ++generation;
    const days = utcDays(Number($("usage-range").value));
    const range = `since=${days[0]}&until=${days.at(-1)}`;
    const usage = (by, limit) => api("GET", agentPath(`/usage?by=${by}&${range}&limit=${limit}`));
    status("Loading usage…");
    try {
      const [perDay, people, servers, tools] = await Promise.all([
        usage("day", days.length),
        usage("user", TOP_ROWS),
        usage("guild", TOP_ROWS),
        usage("tool", TOP_ROWS),
      ]);
      if (mine !== generation || agentId !== currentAgent()) return; // a newer load or agent
      shown = { days, rows: perDay.rows };
      draw();
      $("usage-summary").textContent = summary(days, perDay.rows);
      $("usage-top").replaceChildren(
        table("Top people", "user", people.rows),
        table("Top servers", "guild", servers.rows),
        table("Top tools", "tool", tools.rows),
      );
      status("");
    } catch (error) {
      if (mine !== generation) return;
      // The route needs agents:read on this agent; the API's own message says what the token has.
      const needs =
        error?.status === 403 ? "The Usage panel needs the agents:read scope for this agent. " : "";
      status(`${needs}${explain(error)}`, "error");
    }
  }

  $("usage-range").addEventListener("change", () => load());
  $("usage-refresh").addEventListener("click", () => load());

  return {
    load,
    clear() {
      generation += 1;
      shown = null;
      $("usage-chart").replaceChildren();
      $("usage-top").replaceChildren();
      $("usage-summary").textContent = "";
      status("");
    },
  };
}
