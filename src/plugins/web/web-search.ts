// Web search through the Brave Search API (`GET /web/search?q=`, key in `X-Subscription-Token`),
// offered only when the deployment sets BRAVE_SEARCH_API_KEY. BRAVE_SEARCH_BASE moves it (tests
// point it at a loopback stand-in); both are worker variables, never a character's, so an agent's
// author cannot send the deployment's key elsewhere. The answer is checked with zod; results
// come back as title, URL and snippet, markup removed.
import { z } from "zod";
import { AppError } from "../../runtime/util/errors.ts";

export const SEARCH_KEY = "BRAVE_SEARCH_API_KEY";
export const SEARCH_BASE = "BRAVE_SEARCH_BASE";
export const DEFAULT_SEARCH_BASE = "https://api.search.brave.com/res/v1";

const SearchAnswer = z.looseObject({
  web: z
    .looseObject({
      results: z
        .array(
          z.looseObject({
            title: z.string().max(1_000),
            url: z.string().max(2_000),
            description: z.string().max(5_000).optional(),
          }),
        )
        .max(50),
    })
    .optional(),
});

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export type SearchOutcome = { ok: true; results: SearchResult[] } | { ok: false; error: string };

export async function webSearch(
  fetcher: typeof fetch,
  options: { key: string; base?: string; query: string; count: number; signal?: AbortSignal },
): Promise<SearchOutcome> {
  const endpoint = new URL(
    `${(options.base ?? DEFAULT_SEARCH_BASE).replace(/\/+$/, "")}/web/search`,
  );
  endpoint.searchParams.set("q", options.query);
  endpoint.searchParams.set("count", String(options.count));
  let response: Response;
  try {
    response = await fetcher(endpoint.href, {
      headers: { accept: "application/json", "x-subscription-token": options.key },
      signal: options.signal,
      // The key must not follow a redirect anywhere.
      redirect: "error",
    });
  } catch (error) {
    if (error instanceof AppError)
      return { ok: false, error: `web search failed: ${error.message}` };
    return { ok: false, error: "the search service could not be reached" };
  }
  if (!response.ok) {
    await response.body?.cancel();
    const why =
      response.status === 429
        ? "its rate limit is reached; try again later"
        : response.status === 401 || response.status === 403
          ? "it refused the deployment's API key"
          : `it answered HTTP ${response.status}`;
    return { ok: false, error: `web search failed: ${why}` };
  }
  let parsed: z.infer<typeof SearchAnswer>;
  try {
    parsed = SearchAnswer.parse(await response.json());
  } catch {
    return { ok: false, error: "web search failed: the service's answer was not understood" };
  }
  const results = (parsed.web?.results ?? []).slice(0, options.count).map((result) => ({
    title: plain(result.title),
    url: result.url,
    snippet: plain(result.description ?? ""),
  }));
  return { ok: true, results };
}

/** Brave marks matches with <strong>; the model wants words. */
function plain(text: string): string {
  return text
    .replace(/<[^>]*>/g, "")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ")
    .trim();
}
