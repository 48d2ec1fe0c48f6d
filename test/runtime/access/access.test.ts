// The one check (src/runtime/access/), in plain Node: what each kind of principal may do on an
// (agent, room, user), and that an agent or a schedule acting for someone never gets more than
// they have. The routes' own tests (test/surfaces/auth.test.ts, test/security/) hold the same rules
// through the worker; this table holds them where a new surface will call them.
import { describe, expect, it } from "vitest";
import {
  type Action,
  decide,
  type MemberPrincipal,
  type Principal,
  PrincipalShape,
  type TokenPrincipal,
  requesterKey,
} from "../../../src/runtime/access/index.ts";

const token = (over: Partial<TokenPrincipal> = {}): TokenPrincipal => ({
  kind: "token",
  id: "tok-1",
  scopes: ["messages:write"],
  agents: null,
  userPrefix: null,
  ...over,
});
const admin = token({ id: "admin-token", scopes: ["admin"] });
const acme = token({
  id: "tok-acme",
  userPrefix: "acme:",
  scopes: ["messages:write", "memories:write"],
});
const member = (over: Partial<MemberPrincipal> = {}): MemberPrincipal => ({
  kind: "member",
  platform: "discord",
  userId: "discord:1",
  manager: false,
  owner: false,
  ...over,
});
const allowed = (principal: Principal, action: Action, target = {}) =>
  decide(principal, action, target).allowed;

describe("tokens", () => {
  it("needs the action's scope and one of the token's agents", () => {
    expect(allowed(token(), "message.send", { agentId: "a" })).toBe(true);
    expect(allowed(token(), "memory.read", { agentId: "a" })).toBe(false);
    expect(allowed(token({ agents: ["a"] }), "message.send", { agentId: "b" })).toBe(false);
    expect(decide(token({ agents: ["a"] }), "message.send", { agentId: "b" })).toEqual({
      allowed: false,
      reason: 'this token may not act for agent "b"',
    });
  });

  it("keeps every platform's namespace, task: included, to its surface, compared without case", () => {
    for (const id of ["discord:1", "Discord:1", "telegram:9", "slack:U1", "agent:x", "TASK:api"]) {
      expect(allowed(token(), "message.send", { userId: id })).toBe(false);
      expect(allowed(token(), "message.send", { roomId: id })).toBe(false);
      expect(allowed(admin, "message.send", { userId: id })).toBe(true);
    }
    expect(allowed(token(), "message.send", { roomId: "user:discord:1" })).toBe(false);
  });

  it("holds a user prefix exactly, case included", () => {
    expect(allowed(acme, "message.send", { userId: "acme:bo" })).toBe(true);
    expect(allowed(acme, "message.send", { userId: "ACME:bo" })).toBe(false);
    expect(allowed(acme, "message.send", { roomId: "Acme:room" })).toBe(false);
    expect(allowed(acme, "message.send", { roomId: "user:acme:bo" })).toBe(true);
    expect(allowed(acme, "memory.write", { spansUsers: true })).toBe(false);
  });

  it("shares with every user only without a prefix and with memories:write", () => {
    expect(allowed(acme, "memory.share")).toBe(false);
    expect(allowed(token(), "memory.share")).toBe(false);
    expect(allowed(token({ scopes: ["memories:write"] }), "memory.share")).toBe(true);
    expect(allowed(admin, "memory.share")).toBe(true);
  });

  it("answers a task of its own tenant only", () => {
    const acmeTwo = token({ id: "tok-acme-2", userPrefix: "acme:" });
    const globex = token({ id: "tok-globex", userPrefix: "globex:" });
    expect(allowed(acmeTwo, "task.answer", { requester: acme })).toBe(true);
    expect(allowed(globex, "task.answer", { requester: acme })).toBe(false);
    expect(allowed(token(), "task.answer", { requester: acme })).toBe(false);
    expect(allowed(acme, "task.answer", { requester: token({ id: "operator" }) })).toBe(false);
    expect(allowed(token(), "task.answer", { requester: member() })).toBe(true);
    expect(allowed(admin, "task.answer", { requester: acme })).toBe(true);
  });

  it("reads a task of its own tenant only, with agents:read", () => {
    const reader = (over: Partial<TokenPrincipal>) => token({ scopes: ["agents:read"], ...over });
    expect(allowed(reader({ userPrefix: "acme:" }), "task.read", { requester: acme })).toBe(true);
    expect(allowed(reader({ userPrefix: "globex:" }), "task.read", { requester: acme })).toBe(
      false,
    );
    expect(allowed(reader({}), "task.read", { requester: acme })).toBe(false);
    expect(allowed(reader({}), "task.read", { requester: member() })).toBe(true);
    expect(allowed(acme, "task.read", { requester: acme })).toBe(false);
    expect(decide(reader({ userPrefix: "globex:" }), "task.read", { requester: acme })).toEqual({
      allowed: false,
      reason: 'this task belongs to users whose id starts with "acme:"; this token may not read it',
    });
  });

  it("reads a turn for the inspector: its own users' only, and their prompt only with memories:read and without a prefix", () => {
    const reader = (over: Partial<TokenPrincipal>) => token({ scopes: ["agents:read"], ...over });
    const acmeReader = reader({ userPrefix: "acme:" });
    const turnOf = (turnUserId: string, content = false) => ({ turnUserId, content });
    expect(allowed(acmeReader, "turn.read", turnOf("acme:al"))).toBe(true);
    expect(allowed(acmeReader, "turn.read", turnOf("acme:al", true))).toBe(false);
    expect(allowed(acmeReader, "turn.read", turnOf("globex:bob"))).toBe(false);
    expect(allowed(acmeReader, "turn.read", turnOf("discord:1"))).toBe(false);
    // Without a prefix, any user's turn, reserved namespaces included: it is read, not spoken as.
    // Its prompt and tool results hold what the agent remembers: they need memories:read too.
    const operator = reader({ scopes: ["agents:read", "memories:read"] });
    expect(allowed(operator, "turn.read", turnOf("discord:1", true))).toBe(true);
    expect(allowed(reader({}), "turn.read", turnOf("discord:1"))).toBe(true);
    expect(decide(reader({}), "turn.read", turnOf("discord:1", true))).toEqual({
      allowed: false,
      reason:
        "a turn's prompt and tool results hold what the agent remembers: reading them needs the `memories:read` scope",
    });
    const acmeOperator = reader({ scopes: ["agents:read", "memories:read"], userPrefix: "acme:" });
    expect(allowed(acmeOperator, "turn.read", turnOf("acme:al", true))).toBe(false);
    expect(allowed(admin, "turn.read", turnOf("globex:bob", true))).toBe(true);
    expect(allowed(acme, "turn.read", turnOf("acme:al"))).toBe(false);
    expect(allowed(member(), "turn.read", turnOf("discord:1"))).toBe(false);
  });
});

describe("platform members", () => {
  it("share and manage only as managers or owners, and answer only their own tasks", () => {
    expect(allowed(member(), "message.send")).toBe(true);
    expect(allowed(member(), "memory.share")).toBe(false);
    expect(allowed(member({ manager: true }), "memory.share")).toBe(true);
    expect(allowed(member({ owner: true }), "agent.write")).toBe(true);
    expect(allowed(member(), "task.answer", { requester: member() })).toBe(true);
    expect(allowed(member(), "task.answer", { requester: member({ userId: "discord:2" }) })).toBe(
      false,
    );
    expect(allowed(member({ manager: true }), "memory.read")).toBe(false);
  });
});

describe("agents and schedules acting for someone", () => {
  it("never widen what the asker may do", () => {
    const forAcme: Principal = { kind: "agent", agentId: "alpha", for: acme };
    expect(allowed(forAcme, "message.send", { agentId: "bravo" })).toBe(true);
    expect(allowed(forAcme, "memory.share", { agentId: "bravo" })).toBe(false);
    const forAlphaOnly: Principal = {
      kind: "agent",
      agentId: "alpha",
      for: token({ scopes: ["memories:write"], agents: ["alpha"] }),
    };
    expect(allowed(forAlphaOnly, "memory.share", { agentId: "bravo" })).toBe(false);
    expect(allowed({ kind: "agent", agentId: "alpha", for: admin }, "memory.share")).toBe(true);
    const orphan: Principal = { kind: "schedule", scheduleId: "s1", for: null };
    expect(allowed(orphan, "message.send")).toBe(true);
    expect(allowed(orphan, "memory.share")).toBe(false);
  });

  it("key what they remember by the principal at the root", () => {
    const chain: Principal = {
      kind: "schedule",
      scheduleId: "s1",
      for: { kind: "agent", agentId: "alpha", for: acme },
    };
    expect(requesterKey(chain)).toBe("token:tok-acme");
    expect(requesterKey(member())).toBe("discord:1");
    expect(requesterKey(null)).toBe("unknown");
  });
});

describe("a stored principal is validated when read back", () => {
  it("accepts what was written and refuses a forged or endless one", () => {
    const chain: Principal = { kind: "agent", agentId: "alpha", for: acme };
    expect(PrincipalShape.parse(chain)).toEqual(chain);
    expect(PrincipalShape.safeParse({ ...acme, scopes: ["root"] }).success).toBe(false);
    let deep: Principal = acme;
    for (let i = 0; i < 12; i++) deep = { kind: "agent", agentId: `a${i}`, for: deep };
    expect(PrincipalShape.safeParse(deep).success).toBe(false);
  });
});
