// The playground: pick or create an agent, chat with it (replies stream as server-sent events, see
// the streaming contract in docs/streaming.md; a plain JSON answer works too), watch its tool
// calls and the memories each turn used, browse and search memories, and see its MCP servers.
// Security: the API token lives only in sessionStorage (this tab); server and model text is put
// on the page with textContent only, never as HTML; links from the server must be http(s).
// Skills and proposals, usage, and the turn inspector have their own modules
// (playground-skills.js, playground-usage.js, playground-inspector.js).
import { turnInspector } from "./playground-inspector.js";
import { skillsPanel } from "./playground-skills.js";
import { usagePanel } from "./playground-usage.js";

const TOKEN_KEY = "edge-agents.token";
const AGENT_KEY = "edge-agents.agent";
const MEMORY_PAGE = 20;

const $ = (id) => document.getElementById(id);
const state = {
  token: sessionStorage.getItem(TOKEN_KEY) ?? "",
  agentId: "",
  memoryCursor: null,
  sending: false,
  consentPending: false,
  /** Bumped by each send: a room history that was loading meanwhile is older than the log. */
  logVersion: 0,
};

class ApiError extends Error {
  constructor(status, error) {
    super(typeof error.message === "string" ? error.message : `HTTP ${status}`);
    this.status = status;
    this.code = error.code;
    this.details = error.details;
  }
}

/** Builds an element; strings become text nodes, so nothing from the server is ever parsed as HTML. */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function setStatus(id, message, kind = "info") {
  const node = $(id);
  node.textContent = message;
  node.dataset.kind = kind;
}

async function request(method, path, body, headers = {}) {
  const init = { method, headers: { authorization: `Bearer ${state.token}`, ...headers } };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await toApiError(response);
  return response;
}

async function api(method, path, body) {
  const response = await request(method, path, body);
  return response.status === 204 ? null : response.json();
}

async function toApiError(response) {
  let error = {
    code: `http_${response.status}`,
    message: `HTTP ${response.status} ${response.statusText}`.trim(),
  };
  try {
    const body = await response.json();
    if (body && typeof body.error === "object" && body.error !== null) error = body.error;
  } catch {
    // Not the JSON error envelope (a proxy's page): keep the status line.
  }
  return new ApiError(response.status, error);
}

/** A sentence for the user; a refused token also sends them back to the token form. */
function explain(error) {
  if (!(error instanceof ApiError))
    return `Request failed: ${error instanceof Error ? error.message : String(error)}`;
  if (error.status === 401) {
    showSignedIn(false);
    setStatus("token-status", `The server refused this token: ${error.message}`, "error");
    $("token").focus();
    return `Not signed in: ${error.message}. Enter a valid API token above.`;
  }
  if (error.status === 403) return `This token may not do that: ${error.message}`;
  if (error.status === 429) return `Rate limited: ${error.message}`;
  return `${error.message} (${error.code}, HTTP ${error.status})`;
}

function agentPath(suffix = "") {
  return `/agents/${encodeURIComponent(state.agentId)}${suffix}`;
}

// ---- token -------------------------------------------------------------------------------------

function showSignedIn(signedIn) {
  $("token-form").hidden = signedIn;
  $("signed-in").hidden = !signedIn;
  $("workspace").hidden = !signedIn;
}

async function connect() {
  setStatus("token-status", "Checking the token…");
  try {
    await loadAgents(sessionStorage.getItem(AGENT_KEY) ?? "");
    setStatus("token-status", "");
    showSignedIn(true);
    checkEvaluators();
  } catch (error) {
    showSignedIn(false);
    const message = explain(error);
    if (!(error instanceof ApiError && error.status === 401))
      setStatus("token-status", message, "error");
  }
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.token = $("token").value.trim();
  $("token").value = "";
  sessionStorage.setItem(TOKEN_KEY, state.token);
  connect();
});

$("token-forget").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = "";
  showSignedIn(false);
  setStatus("token-status", "Token forgotten.");
  $("token").focus();
});

// ---- memory health -----------------------------------------------------------------------------

/**
 * Says when after-reply evaluators (facts, summaries) failed today, from /health: the replies look
 * fine then, but nothing is remembered. Names the last one's cause and what to check (/health's
 * `fix`). Checked on sign-in and a moment after each reply.
 */
async function checkEvaluators() {
  let evaluators = null;
  try {
    evaluators = (await (await fetch("/health")).json())?.evaluators ?? null;
  } catch {
    return; // /health unreachable: the chat says so on its own.
  }
  const failed = evaluators?.failedToday ?? 0;
  const last = evaluators?.last;
  setStatus(
    "memory-warning",
    failed === 0
      ? ""
      : `${plural(failed, "memory step")} failed today (last: ${last?.evaluator ?? "unknown"}${last ? ` at ${time(last.at)}` : ""}${last?.cause ? `, ${last.cause.replace("_", " ")}` : ""}): replies still work, but facts and summaries are not being saved. ${last?.fix ?? ""}`,
    failed === 0 ? "info" : "error",
  );
}

// ---- agents ------------------------------------------------------------------------------------

async function loadAgents(preferred) {
  const agents = [];
  let after = null;
  do {
    const page = await api(
      "GET",
      `/agents?limit=100${after ? `&after=${encodeURIComponent(after)}` : ""}`,
    );
    agents.push(...page.agents);
    after = page.nextCursor;
  } while (after);
  const select = $("agent-select");
  select.replaceChildren(
    ...agents.map((agent) =>
      el("option", { value: agent.id, text: `${agent.name} (${agent.id})` }),
    ),
  );
  if (agents.length === 0) {
    select.append(el("option", { value: "", text: "No agents yet: create one below" }));
    $("create-agent").open = true;
  }
  const chosen = agents.some((agent) => agent.id === preferred) ? preferred : (agents[0]?.id ?? "");
  select.value = chosen;
  selectAgent(chosen);
}

function selectAgent(agentId) {
  state.agentId = agentId;
  if (agentId) sessionStorage.setItem(AGENT_KEY, agentId);
  $("log").replaceChildren();
  $("memories").replaceChildren();
  $("memories-more").hidden = true;
  for (const id of ["agent-status", "chat-status", "memory-status", "tools-status"])
    setStatus(id, "");
  $("servers").replaceChildren();
  $("tools-summary").textContent = "";
  skills.clear();
  usage.clear();
  if (!agentId) return;
  // Not awaited: the servers are probed live and may be slow; each panel reports its own errors.
  loadTools();
  skills.load();
  usage.load();
  openRoom();
}

$("agent-select").addEventListener("change", (event) => selectAgent(event.target.value));
$("agents-refresh").addEventListener("click", () =>
  loadAgents(state.agentId).catch((error) => setStatus("tools-status", explain(error), "error")),
);

$("create-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = $("character");
  const errors = $("character-errors");
  errors.replaceChildren();
  field.removeAttribute("aria-invalid");
  const showIssues = (issues) => {
    field.setAttribute("aria-invalid", "true");
    errors.replaceChildren(
      ...issues.map((issue) =>
        el("li", {}, el("code", { text: issue.path || "(file)" }), `: ${issue.message}`),
      ),
    );
  };
  let character;
  try {
    character = JSON.parse(field.value);
  } catch (error) {
    showIssues([
      { path: "JSON", message: error instanceof Error ? error.message : "not valid JSON" },
    ]);
    return field.focus();
  }
  try {
    const created = await api("POST", "/agents", character);
    field.value = "";
    $("create-agent").open = false;
    await loadAgents(created.id);
    setStatus("agent-status", `Created agent ${created.id}.`, "ok");
    $("message").focus();
  } catch (error) {
    const issues =
      error instanceof ApiError && Array.isArray(error.details?.issues) ? error.details.issues : [];
    showIssues(issues.length > 0 ? issues : [{ path: "", message: explain(error) }]);
    field.focus();
  }
});

$("delete-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const agentId = state.agentId;
  if (!agentId) return;
  // Typing the id, not a second click: this takes the agent's whole memory with it.
  if ($("delete-confirm").value.trim() !== agentId) {
    setStatus("delete-status", `Type ${agentId} exactly to delete this agent.`, "error");
    return $("delete-confirm").focus();
  }
  try {
    await api("DELETE", `/agents/${encodeURIComponent(agentId)}`);
    $("delete-form").reset();
    $("delete-agent").open = false;
    setStatus("delete-status", "");
    sessionStorage.removeItem(AGENT_KEY);
    await loadAgents("");
    // Not in the chat's status: the next agent's room history, loading now, writes there.
    setStatus("agent-status", `Deleted agent ${agentId}.`, "ok");
  } catch (error) {
    setStatus("delete-status", explain(error), "error");
  }
});

// ---- MCP servers and tools ---------------------------------------------------------------------

/** Only http(s) links from the server become clickable (no javascript: or data: URLs). */
function safeUrl(text) {
  try {
    const url = new URL(text, location.href);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

async function loadTools() {
  setStatus("tools-status", "Checking the agent's MCP servers…");
  try {
    const agentId = state.agentId;
    const { servers, tools } = await api("GET", agentPath("/tools"));
    if (agentId !== state.agentId) return; // another agent was picked meanwhile
    $("servers").replaceChildren(...servers.map(serverCard));
    if (servers.length === 0)
      $("servers").append(el("li", { class: "muted", text: "No MCP servers." }));
    $("tools-summary").textContent =
      `Tools it can call: ${tools.map((tool) => tool.name).join(", ") || "none"}`;
    setStatus("tools-status", "");
  } catch (error) {
    setStatus("tools-status", explain(error), "error");
  }
}

function serverCard(server) {
  const card = el(
    "li",
    { class: "card" },
    el(
      "div",
      { class: "card-head" },
      el("strong", { text: server.name }),
      el("span", { class: `badge state-${server.state}`, text: server.state }),
    ),
    el("div", {
      class: "muted small",
      text: `${server.url} · ${server.transport} · auth: ${server.auth} · ${server.origin}`,
    }),
    server.error ? el("div", { class: "error small", text: server.error }) : null,
    server.tools.length > 0
      ? el("div", {
          class: "small",
          text: `Tools: ${server.tools.map((tool) => tool.name).join(", ")}`,
        })
      : null,
  );
  if (server.origin === "agent")
    card.querySelector(".card-head").append(removeServerButton(server));
  if (server.auth === "oauth" && server.state !== "ready") {
    const slot = el("div", { class: "row" });
    const link = (href) =>
      el("a", {
        href,
        target: "_blank",
        rel: "noopener noreferrer",
        class: "button",
        text: `Connect ${server.name} (opens the consent page)`,
        onclick: () => (state.consentPending = true),
      });
    const href = server.authUrl ? safeUrl(server.authUrl) : null;
    if (href) slot.append(link(href));
    else {
      slot.append(
        el("button", {
          type: "button",
          text: `Connect ${server.name}`,
          onclick: async () => {
            try {
              const view = await api("POST", agentPath("/tools"), { name: server.name });
              const fresh = view.authUrl ? safeUrl(view.authUrl) : null;
              if (!fresh)
                return setStatus(
                  "tools-status",
                  `${server.name}: ${view.state}${view.error ? `: ${view.error}` : ""}`,
                );
              slot.replaceChildren(link(fresh));
              state.consentPending = true;
              window.open(fresh, "_blank", "noopener");
            } catch (error) {
              setStatus("tools-status", explain(error), "error");
            }
          },
        }),
      );
    }
    card.append(slot);
  }
  return card;
}

/** Stops the agent using a server it was given at runtime (registry servers come from the deployment), after a second click. */
function removeServerButton(server) {
  return confirmingButton({
    label: "Remove",
    confirm: "Really remove?",
    className: "card-action",
    ariaLabel: `Remove the MCP server ${server.name}`,
    statusId: "tools-status",
    act: async () => {
      await api("DELETE", agentPath(`/tools/${encodeURIComponent(server.name)}`));
      setStatus("tools-status", `Removed ${server.name}.`, "ok");
      await loadTools();
    },
  });
}

$("server-auth").addEventListener("change", () => {
  $("server-secret-field").hidden = $("server-auth").value !== "bearer";
});

$("server-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!state.agentId) return;
  const errors = $("server-errors");
  errors.replaceChildren();
  const kind = $("server-auth").value;
  const auth =
    kind === "bearer"
      ? { type: "bearer", secret: $("server-secret").value.trim() }
      : { type: kind };
  const body = { name: $("server-name").value.trim(), url: $("server-url").value.trim(), auth };
  try {
    const view = await api("POST", agentPath("/tools"), body);
    $("server-form").reset();
    $("server-secret-field").hidden = true;
    $("add-server").open = false;
    setStatus(
      "tools-status",
      `Added ${view.name}: ${view.state}${view.error ? ` (${view.error})` : ""}.`,
      view.state === "ready" ? "ok" : "info",
    );
    await loadTools();
  } catch (error) {
    const issues =
      error instanceof ApiError && Array.isArray(error.details?.issues) ? error.details.issues : [];
    const items =
      issues.length > 0
        ? issues.map((issue) =>
            el("li", {}, el("code", { text: issue.path || "(body)" }), `: ${issue.message}`),
          )
        : [el("li", { text: explain(error) })];
    errors.replaceChildren(...items);
  }
});

$("tools-refresh").addEventListener("click", () => state.agentId && loadTools());
// Back from a consent tab: show whether the server is ready now, without a click.
window.addEventListener("focus", () => {
  if (state.consentPending && state.agentId) {
    state.consentPending = false;
    loadTools();
  }
});

// ---- chat --------------------------------------------------------------------------------------

function roomId() {
  return $("room-id").value.trim() || `user:${$("user-id").value.trim()}`;
}

function time(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

function messageItem(role, who, text, at) {
  return el(
    "li",
    { class: `msg ${role}` },
    el("div", { class: "meta", text: `${who}${at ? ` · ${time(at)}` : ""}` }),
    el("p", { class: "text", text }),
  );
}

async function openRoom() {
  if (!state.agentId || !$("room-form").reportValidity()) return;
  setStatus("chat-status", "Loading the room's history…");
  try {
    const path = agentPath(`/rooms/${encodeURIComponent(roomId())}/messages?limit=50`);
    const agentId = state.agentId;
    const version = state.logVersion;
    const { messages } = await api("GET", path);
    if (agentId !== state.agentId) return; // another agent was picked meanwhile
    // A message sent while the history loaded is in the log already; the history lacks it.
    if (version !== state.logVersion) return;
    $("log").replaceChildren(...messages.reverse().map(historyItem));
    delete $("log").dataset.pinned;
    setStatus(
      "chat-status",
      messages.length === 0 ? `Room ${roomId()} is empty: say something.` : `Room ${roomId()}.`,
    );
    scrollLog();
  } catch (error) {
    setStatus("chat-status", explain(error), "error");
  }
}

$("room-form").addEventListener("submit", (event) => {
  event.preventDefault();
  openRoom();
});

/** "1 model call", "3 model calls". */
function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/**
 * Keeps the newest messages in view, unless the reader opened a turn inspector (it pins the
 * conversation where it is until they scroll back to the end): a reply's last events must not
 * pull an inspector they just opened out of view. `follow` is a new message or room: back to the end.
 */
function scrollLog(follow = false) {
  const log = $("log");
  if (follow) delete log.dataset.pinned;
  if (log.dataset.pinned) return;
  log.scrollTop = log.scrollHeight;
}

$("log").addEventListener("scroll", () => {
  const log = $("log");
  if (log.scrollHeight - log.scrollTop - log.clientHeight < 2) delete log.dataset.pinned;
});

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
 * A message of the room's history. A reply whose turn the server still knows is drawn as a
 * streamed turn ends (memories used, footer), and a failed turn as its error.
 */
function historyItem(m) {
  if (m.role !== "agent" || !m.turn)
    return messageItem(
      m.role,
      m.role === "agent" ? state.agentId : (m.userName ?? m.userId ?? "user"),
      m.text,
      m.createdAt,
    );
  const turn = turnView(m.createdAt);
  if (m.turn.error) turn.fail(failedTurnText(m.turn.error));
  else turn.done({ ...m.turn, reply: { text: m.text } });
  return turn.item;
}

/** A failed turn, as the stream's `error` event and the history's `turn.error` tell it. */
function failedTurnText(error) {
  return `The turn failed: ${error?.message ?? "unknown error"} (${error?.code ?? "error"})`;
}

/**
 * One agent turn on the page: memories used, tool calls, and the reply as it streams; `at` for a
 * turn from the room's history.
 */
function turnView(at) {
  const memories = el("details", { class: "memories", hidden: true });
  const tools = el("div", { class: "tools" });
  const text = el("p", { class: "text streaming", text: "…" });
  const meta = el("div", { class: "meta", text: `${state.agentId}${at ? ` · ${time(at)}` : ""}` });
  const foot = el("div", { class: "muted small" });
  const inspect = el("div", { class: "inspect-slot" });
  // aria-busy: screen readers announce the finished turn once, not every delta.
  const item = el(
    "li",
    { class: "msg agent", "aria-busy": "true" },
    meta,
    memories,
    tools,
    text,
    foot,
    inspect,
  );
  const calls = new Map();
  let draft = "";

  const toolCall = (call) => {
    const result = el("pre", { class: "small", text: "running…" });
    const summary = el(
      "summary",
      {},
      el("span", { class: "badge", text: "tool" }),
      ` ${call.name}`,
    );
    const box = el(
      "details",
      { class: "tool", open: true },
      summary,
      el("div", { class: "small muted", text: "arguments" }),
      el("pre", { class: "small", text: pretty(call.arguments) }),
      el("div", { class: "small muted", text: "result" }),
      result,
    );
    tools.append(box);
    calls.set(call.id, { result, summary });
  };
  const toolResult = (res) => {
    if (!calls.has(res.id)) toolCall(res);
    const { result, summary } = calls.get(res.id);
    result.textContent = pretty(res.output);
    summary.append(
      el("span", {
        class: `badge ${res.ok ? "state-ready" : "state-failed"}`,
        text: `${res.ok ? "ok" : "failed"} · ${res.durationMs} ms${res.cached ? " · cached" : ""}`,
      }),
    );
  };

  let memoriesShown = false;
  const showMemories = (list) => {
    memoriesShown = true;
    memories.hidden = false;
    memories.replaceChildren(
      el("summary", { text: `Memories used (${list.length})` }),
      el(
        "ol",
        { class: "small" },
        ...list.map((m) =>
          el(
            "li",
            {},
            el("span", { class: "badge", text: m.type }),
            ` ${m.text} `,
            typeof m.score === "number"
              ? el("span", { class: "muted", text: `score ${m.score.toFixed(3)}` })
              : null,
          ),
        ),
      ),
    );
  };

  return {
    item,
    memories: showMemories,
    delta(piece) {
      draft += piece;
      text.textContent = draft;
    },
    toolCall,
    toolResult,
    done(outcome) {
      item.setAttribute("aria-busy", "false");
      // A plain JSON answer (no stream) carries the memories in its body.
      if (!memoriesShown && Array.isArray(outcome.memories)) showMemories(outcome.memories);
      for (const call of outcome.toolCalls ?? []) if (!calls.has(call.id)) toolResult(call);
      text.classList.remove("streaming");
      text.textContent = outcome.reply?.text ?? `(no reply: ${outcome.stopReason})`;
      const usage = outcome.usage ?? {};
      foot.textContent = [
        outcome.model ?? "no model",
        `${usage.promptTokens ?? 0}+${usage.completionTokens ?? 0} tokens`,
        plural(usage.modelCalls ?? 0, "model call"),
        outcome.stopReason,
      ]
        .filter(Boolean)
        .join(" · ");
      // A reply's turn is kept for the inspector (a fresh one's just after the reply).
      if (outcome.reply && outcome.turnId) {
        const { button, panel } = inspector.control(outcome.turnId, { fresh: !at });
        inspect.replaceChildren(button, panel);
      }
    },
    fail(message) {
      item.setAttribute("aria-busy", "false");
      text.classList.remove("streaming");
      text.classList.add("error");
      text.textContent = message;
    },
  };
}

/** Reads a text/event-stream body: `event:` + `data:` blocks; `:` lines are keep-alives. */
async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (let match = /\r?\n\r?\n/.exec(buffer); match; match = /\r?\n\r?\n/.exec(buffer)) {
      const block = buffer.slice(0, match.index);
      buffer = buffer.slice(match.index + match[0].length);
      let name = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") name = text;
        else if (field === "data") data.push(text);
      }
      if (data.length > 0) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

async function send(text) {
  const userId = $("user-id").value.trim();
  state.logVersion += 1;
  $("log").append(messageItem("user", userId, text, Date.now()));
  const turn = turnView();
  $("log").append(turn.item);
  scrollLog(true);
  const body = {
    userId,
    text,
    ...($("room-id").value.trim() ? { roomId: $("room-id").value.trim() } : {}),
  };
  let finished = false;
  try {
    const response = await request("POST", agentPath("/messages"), body, {
      accept: "text/event-stream, application/json;q=0.9",
      // A retried send (or a reload mid-turn) must not answer twice.
      "idempotency-key": crypto.randomUUID(),
    });
    if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
      setStatus("chat-status", "Streaming the reply…");
      await readEvents(response, (name, data) => {
        if (name === "memories") turn.memories(data.memories ?? []);
        else if (name === "delta") turn.delta(data.text ?? "");
        else if (name === "tool_call") turn.toolCall(data);
        else if (name === "tool_result") turn.toolResult(data);
        else if (name === "done") {
          finished = true;
          turn.done(data);
        } else if (name === "error") {
          finished = true;
          turn.fail(failedTurnText(data.error));
        }
        scrollLog();
      });
    } else {
      turn.done(await response.json());
      finished = true;
    }
    if (!finished) {
      turn.fail(
        "The connection closed before the reply finished. The turn still completes on the server: reloading the room's history.",
      );
      setTimeout(openRoom, 2000);
    } else {
      setStatus("chat-status", "");
      // The reply's evaluators run after it: look once they have had a moment.
      setTimeout(checkEvaluators, 1500);
    }
  } catch (error) {
    turn.fail(explain(error));
    setStatus("chat-status", "The message was not answered.", "error");
  }
  scrollLog();
}

$("send-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("message").value.trim();
  if (!text || state.sending || !state.agentId || !$("room-form").reportValidity()) return;
  state.sending = true;
  $("send").disabled = true;
  $("message").value = "";
  try {
    await send(text);
  } finally {
    state.sending = false;
    $("send").disabled = false;
    $("message").focus();
  }
});

$("message").addEventListener("keydown", (event) => {
  // Enter sends; Shift+Enter is a new line; Enter while an IME composes a word is not a send.
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("send-form").requestSubmit();
  }
});

// ---- memories ----------------------------------------------------------------------------------

function memoryCard(memory) {
  const facts = [
    memory.userId && `user ${memory.userId}`,
    memory.roomId && `room ${memory.roomId}`,
    new Date(memory.createdAt).toLocaleString(),
  ];
  if (memory.score !== undefined)
    facts.unshift(`score ${memory.score.toFixed(3)} (${memory.matchedBy.join("+")})`);
  if (memory.embedded === false) facts.push("not embedded yet");
  const card = el(
    "li",
    { class: "card" },
    el(
      "div",
      { class: "card-head" },
      el("span", { class: "badge", text: memory.type }),
      el("span", { class: "muted small", text: facts.filter(Boolean).join(" · ") }),
      forgetButton(memory, () => card.remove()),
    ),
    el("p", { class: "text", text: memory.text }),
  );
  return card;
}

/** Deletes one memory (a wrong fact, a stale document) after a second click. */
function forgetButton(memory, removed) {
  const label = memory.type === "document" ? "Forget (with its fragments)" : "Forget";
  return confirmingButton({
    label,
    confirm: "Really forget?",
    className: "forget",
    ariaLabel: `${label}: ${memory.type} “${memory.text.slice(0, 60)}”`,
    statusId: "memory-status",
    act: async () => {
      const params = new URLSearchParams({ agentId: memory.agentId, id: memory.id });
      const { deleted } = await api("DELETE", `/memories?${params}`);
      removed();
      setStatus(
        "memory-status",
        deleted === 0
          ? "That memory was already gone."
          : `Forgot ${deleted === 1 ? "1 memory" : `${deleted} memories`}, with their vectors.`,
      );
    },
  });
}

/**
 * A card's destructive button: the first click turns it into `confirm` for five seconds, the
 * second runs `act` (no dialog, so it works by keyboard and on phones). A failure is said in the
 * panel's status and the button comes back.
 */
function confirmingButton({ label, confirm, className, ariaLabel, statusId, act }) {
  let armed = null;
  const button = el("button", {
    type: "button",
    class: `secondary small ${className}`,
    text: label,
    "aria-label": ariaLabel,
    onclick: async () => {
      if (!armed) {
        button.textContent = confirm;
        armed = setTimeout(() => {
          armed = null;
          button.textContent = label;
        }, 5000);
        return;
      }
      clearTimeout(armed);
      armed = null;
      button.disabled = true;
      try {
        await act();
      } catch (error) {
        button.disabled = false;
        button.textContent = label;
        setStatus(statusId, explain(error), "error");
      }
    },
  });
  return button;
}

const skills = skillsPanel({
  $,
  el,
  api,
  explain,
  setStatus,
  confirmingButton,
  agentPath,
  currentAgent: () => state.agentId,
  issuesOf: (error) =>
    error instanceof ApiError && Array.isArray(error.details?.issues) ? error.details.issues : [],
});

const inspector = turnInspector({ el, api, explain, agentPath });

const usage = usagePanel({
  $,
  el,
  api,
  explain,
  setStatus,
  agentPath,
  currentAgent: () => state.agentId,
});

async function browse(more) {
  if (!state.agentId) return;
  const params = new URLSearchParams({ agentId: state.agentId, limit: String(MEMORY_PAGE) });
  if ($("memory-type").value) params.set("type", $("memory-type").value);
  if (more && state.memoryCursor) params.set("cursor", state.memoryCursor);
  setStatus("memory-status", "Loading…");
  try {
    const page = await api("GET", `/memories?${params}`);
    const cards = page.memories.map(memoryCard);
    if (more) $("memories").append(...cards);
    else $("memories").replaceChildren(...cards);
    state.memoryCursor = page.nextCursor;
    $("memories-more").hidden = !page.nextCursor;
    setStatus("memory-status", `${$("memories").children.length} memories shown, newest first.`);
  } catch (error) {
    setStatus("memory-status", explain(error), "error");
  }
}

$("browse-form").addEventListener("submit", (event) => {
  event.preventDefault();
  browse(false);
});
$("memories-more").addEventListener("click", () => browse(true));

$("search-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const query = $("memory-query").value.trim();
  if (!query || !state.agentId) return;
  setStatus("memory-status", "Searching…");
  try {
    const body = { agentId: state.agentId, query, limit: 10 };
    if ($("memory-type").value) body.type = $("memory-type").value;
    const { memories } = await api("POST", "/memories/similar", body);
    $("memories").replaceChildren(...memories.map(memoryCard));
    $("memories-more").hidden = true;
    setStatus("memory-status", `${memories.length} found for “${query}”, best first.`);
  } catch (error) {
    setStatus("memory-status", explain(error), "error");
  }
});

if (state.token) connect();
else $("token").focus();
