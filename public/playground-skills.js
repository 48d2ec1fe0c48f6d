// The playground's "Skills and proposals" panel (docs/skills.md): the agent's skills by name and
// description (the body on demand), adding and deleting skills, and what the agent proposed to
// change about itself with Approve / Deny. playground.js hands it its helpers; like the rest of
// the page it puts server text on the page with textContent only.

/**
 * @param {{
 *   $: (id: string) => HTMLElement,
 *   el: Function, api: Function, explain: Function, setStatus: Function,
 *   confirmingButton: Function, agentPath: (suffix?: string) => string,
 *   currentAgent: () => string, issuesOf: (error: unknown) => Array<{path: string, message: string}>,
 * }} page
 */
export function skillsPanel(page) {
  const { $, el, api, explain, setStatus, confirmingButton, agentPath, currentAgent } = page;
  const status = (message, kind) => setStatus("skills-status", message, kind);

  function skillCard(skill) {
    const body = el("pre", { class: "text small", hidden: true });
    const show = el("button", {
      type: "button",
      class: "secondary small",
      text: "Show",
      "aria-label": `Show the skill ${skill.name}`,
      onclick: async () => {
        if (!body.hidden) {
          body.hidden = true;
          show.textContent = "Show";
          return;
        }
        try {
          const full = await api("GET", agentPath(`/skills/${encodeURIComponent(skill.name)}`));
          body.textContent = full.body;
          body.hidden = false;
          show.textContent = "Hide";
        } catch (error) {
          status(explain(error), "error");
        }
      },
    });
    const head = el(
      "div",
      { class: "card-head" },
      el("strong", { text: skill.name }),
      el("span", { class: "badge", text: skill.source }),
      show,
    );
    // The character's own skills change with the character file, not here.
    if (skill.source !== "character")
      head.append(
        confirmingButton({
          label: "Delete",
          confirm: "Really delete?",
          className: "card-action",
          ariaLabel: `Delete the skill ${skill.name}`,
          statusId: "skills-status",
          act: async () => {
            await api("DELETE", agentPath(`/skills/${encodeURIComponent(skill.name)}`));
            status(`Deleted the skill ${skill.name}.`, "ok");
            await load();
          },
        }),
      );
    return el(
      "li",
      { class: "card" },
      head,
      el("p", { class: "text", text: skill.description }),
      body,
    );
  }

  function proposalCard(proposal) {
    const change = proposal.change;
    const what =
      proposal.kind === "skill"
        ? `Save the skill ${change.skill.name}: ${change.skill.description}`
        : `Add the MCP server ${change.server}: ${change.reason}`;
    const decide = (approve) =>
      el("button", {
        type: "button",
        class: approve ? "small" : "secondary small",
        text: approve ? "Approve" : "Deny",
        "aria-label": `${approve ? "Approve" : "Deny"}: ${what.slice(0, 80)}`,
        onclick: async () => {
          try {
            const result = await api("POST", agentPath(`/proposals/${proposal.id}`), { approve });
            status(
              `${result.proposal.status === "approved" ? "Approved" : "Denied"}: ${what}${result.applied ? ` (${result.applied})` : ""}.`,
              "ok",
            );
            await load();
          } catch (error) {
            status(explain(error), "error");
          }
        },
      });
    const facts = `${proposal.origin.surface} · ${new Date(proposal.createdAt).toLocaleString()}`;
    return el(
      "li",
      { class: "card" },
      el(
        "div",
        { class: "card-head" },
        el("span", { class: "badge", text: proposal.kind }),
        el("span", { class: "muted small", text: facts }),
        decide(true),
        decide(false),
      ),
      el("p", { class: "text", text: what }),
      proposal.kind === "skill"
        ? el("pre", { class: "text small", text: change.skill.body })
        : null,
    );
  }

  async function load() {
    const agentId = currentAgent();
    if (!agentId) return;
    try {
      const [{ skills }, { proposals }] = await Promise.all([
        api("GET", agentPath("/skills")),
        api("GET", agentPath("/proposals?status=pending")),
      ]);
      if (agentId !== currentAgent()) return; // another agent was picked meanwhile
      $("skills").replaceChildren(...skills.map(skillCard));
      if (skills.length === 0) $("skills").append(el("li", { class: "muted", text: "No skills." }));
      $("proposals").replaceChildren(...proposals.map(proposalCard));
      if (proposals.length === 0)
        $("proposals").append(el("li", { class: "muted", text: "Nothing waits for an answer." }));
    } catch (error) {
      status(explain(error), "error");
    }
  }

  $("skill-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const errors = $("skill-errors");
    errors.replaceChildren();
    const skill = {
      name: $("skill-name").value.trim(),
      description: $("skill-description").value.trim(),
      body: $("skill-body").value,
    };
    try {
      const saved = await api("POST", agentPath("/skills"), skill);
      $("skill-form").reset();
      $("add-skill").open = false;
      status(`Saved the skill ${saved.name}.`, "ok");
      await load();
    } catch (error) {
      const issues = page.issuesOf(error);
      errors.replaceChildren(
        ...(issues.length > 0 ? issues : [{ path: "", message: explain(error) }]).map((issue) =>
          el(
            "li",
            {},
            issue.path ? el("code", { text: issue.path }) : null,
            `${issue.path ? ": " : ""}${issue.message}`,
          ),
        ),
      );
    }
  });
  $("skills-refresh").addEventListener("click", () => load());

  return {
    load,
    clear() {
      $("skills").replaceChildren();
      $("proposals").replaceChildren();
      status("");
    },
  };
}
