// The pages of an agent's /oauth/authorize: the consent form, and the page that says why a consent
// could not go on. Everything the client chose (its name, its redirect URI, the scopes it asks)
// is escaped; there is no script and no inline style, and the headers are public/_headers' CSP
// with the client's redirect origin added to form-action, since browsers hold a form's redirect
// to that directive.
import type { ConsentDescription } from "@cloudflare/workers-oauth-provider";

const SCOPE_MEANING: Record<string, string> = {
  "messages:write": "talk to the agent (chat) and start tasks (start_task)",
  "memories:read": "search what the agent remembers (search_memories)",
  "agents:read": "read tasks (get_task) and the agent's character",
};

const escapeHtml = (value: string): string =>
  value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

export interface ConsentPageOptions {
  agentId: string;
  agentName: string | null;
  details: ConsentDescription;
  handle: string;
  action: string;
}

export function consentPage({
  agentId,
  agentName,
  details,
  handle,
  action,
}: ConsentPageOptions): string {
  const name = escapeHtml(details.clientName);
  const agent = agentName
    ? `${escapeHtml(agentName)} (<code>${escapeHtml(agentId)}</code>)`
    : `<code>${escapeHtml(agentId)}</code>`;
  const scopes = details.scope.length
    ? details.scope
        .map((scope) => {
          const meaning = SCOPE_MEANING[scope];
          return `<li><code>${escapeHtml(scope)}</code>${meaning ? `: ${escapeHtml(meaning)}` : " (not offered here: ignored)"}</li>`;
        })
        .join("")
    : "<li>none named: every MCP scope your token has</li>";
  const loopback = details.redirectIsLoopback
    ? "<p><strong>Access goes to an app on this computer.</strong> Continue only if you just started connecting from it.</p>"
    : "";
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Connect ${name} to agent ${escapeHtml(agentId)}</title></head>
<body>
<h1>Connect ${name} to agent ${agent}?</h1>
<p>The app registered itself as <strong>${name}</strong> (client <code>${escapeHtml(details.clientId)}</code>); its name is not verified.</p>
<p>Access will be sent to <strong>${escapeHtml(details.redirectHost)}</strong>: <code>${escapeHtml(details.redirectUri)}</code></p>
${loopback}
<p>It asks to:</p>
<ul>${scopes}</ul>
<p>It gets no more than the API token below may do, for this agent only, until the grant is revoked.</p>
<form method="post" action="${escapeHtml(action)}">
<input type="hidden" name="handle" value="${escapeHtml(handle)}">
<p><label>API token that may manage agent <code>${escapeHtml(agentId)}</code> (admin, or <code>agents:write</code> for it):<br>
<input type="password" name="token" autocomplete="off" size="60"></label></p>
<p><button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button></p>
</form>
</body>
</html>`;
}

export function consentErrorPage(title: string, message: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body>
</html>`;
}

/** public/_headers' policy; `formTarget` is the origin a submitted form may redirect to. */
export function pageHeaders(base: Headers | undefined, formTarget?: string): Headers {
  const headers = new Headers(base);
  const formAction = formTarget ? `'self' ${formTarget}` : "'self'";
  headers.set(
    "Content-Security-Policy",
    `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action ${formAction}; frame-ancestors 'none'`,
  );
  headers.set("X-Content-Type-Options", "nosniff");
  headers.set("Referrer-Policy", "no-referrer");
  headers.set("Cache-Control", "no-store");
  headers.set("Content-Type", "text/html; charset=utf-8");
  return headers;
}
