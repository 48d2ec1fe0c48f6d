// The few Instagram Graph API calls publishing needs, behind an injected fetch and base URL
// (INSTAGRAM_GRAPH_BASE; tests point it at a stand-in). The token goes in the Authorization header,
// never in a URL that could be logged. Errors keep Meta's code, subcode and is_transient flag, and
// say whether trying again can help: transient flags, codes 1/2/-1/-2 (service), 4/17/32/613
// (rate limits), HTTP 429 and 5xx; everything else (190 bad token, 2207042 limit reached,
// 2207051 spam, 2207004 too large, ...) is reported as it is.
import { z } from "zod";

export const DEFAULT_GRAPH_BASE = "https://graph.facebook.com/v26.0";
const TRANSIENT_CODES = new Set([-2, -1, 1, 2, 4, 17, 32, 341, 613]);

export class GraphApiError extends Error {
  readonly status: number;
  readonly code: number | null;
  readonly subcode: number | null;
  readonly transient: boolean;

  constructor(input: {
    status: number;
    message: string;
    code?: number | null;
    subcode?: number | null;
    transient?: boolean;
  }) {
    super(input.message);
    this.name = "GraphApiError";
    this.status = input.status;
    this.code = input.code ?? null;
    this.subcode = input.subcode ?? null;
    this.transient =
      input.transient === true ||
      (this.code !== null && TRANSIENT_CODES.has(this.code)) ||
      input.status === 429 ||
      input.status >= 500;
  }
}

const GraphError = z.object({
  error: z.object({
    message: z.string().default("unknown error"),
    code: z.number().optional(),
    error_subcode: z.number().optional(),
    is_transient: z.boolean().optional(),
    error_user_msg: z.string().optional(),
  }),
});
const Id = z.object({ id: z.string().min(1) });
const Limit = z.object({
  data: z
    .array(
      z.object({
        quota_usage: z.number(),
        config: z
          .object({ quota_total: z.number(), quota_duration: z.number().optional() })
          .optional(),
      }),
    )
    .min(1),
});
const ContainerStatus = z.object({ status_code: z.string(), status: z.string().optional() });
const Permalink = z.object({ permalink: z.string().optional() });
const RecentMedia = z.object({
  data: z.array(
    z.object({
      id: z.string(),
      caption: z.string().optional(),
      permalink: z.string().optional(),
      timestamp: z.string().optional(),
    }),
  ),
});

export interface GraphClient {
  publishingLimit(): Promise<{ used: number; total: number }>;
  createContainer(params: Record<string, string>): Promise<string>;
  containerStatus(containerId: string): Promise<{ statusCode: string; status?: string }>;
  publish(containerId: string): Promise<string>;
  permalink(mediaId: string): Promise<string | null>;
  recentMedia(): Promise<
    Array<{ id: string; caption?: string; permalink?: string; timestamp?: string }>
  >;
}

export interface GraphClientOptions {
  baseUrl?: string;
  userId: string;
  accessToken: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

export function createGraphClient(options: GraphClientOptions): GraphClient {
  const base = (options.baseUrl ?? DEFAULT_GRAPH_BASE).replace(/\/+$/, "");
  const fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
  const timeoutMs = options.timeoutMs ?? 20_000;

  async function call<T>(
    method: "GET" | "POST",
    path: string,
    schema: z.ZodType<T>,
    params: Record<string, string> = {},
  ): Promise<T> {
    const url = new URL(`${base}/${path}`);
    let body: URLSearchParams | undefined;
    if (method === "GET") for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    else body = new URLSearchParams(params);
    let response: Response;
    try {
      response = await fetchFn(url, {
        method,
        headers: { authorization: `Bearer ${options.accessToken}` },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new GraphApiError({
        status: 0,
        message: `the Graph API could not be reached (${error instanceof Error ? error.message : String(error)})`,
        transient: true,
      });
    }
    const text = await response.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // handled below
    }
    if (!response.ok) {
      const parsed = GraphError.safeParse(json);
      if (!parsed.success)
        throw new GraphApiError({
          status: response.status,
          message: `the Graph API answered ${response.status}`,
        });
      const e = parsed.data.error;
      throw new GraphApiError({
        status: response.status,
        message: e.error_user_msg ?? e.message,
        code: e.code,
        subcode: e.error_subcode,
        transient: e.is_transient,
      });
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new GraphApiError({
        status: response.status,
        message: `the Graph API answered ${path} with an unexpected body`,
        transient: true,
      });
    return parsed.data;
  }

  const user = encodeURIComponent(options.userId);
  return {
    async publishingLimit() {
      const limit = await call("GET", `${user}/content_publishing_limit`, Limit, {
        fields: "quota_usage,config",
      });
      const entry = limit.data[0]!;
      // The quota is read, never assumed; a response without config counts as no known ceiling.
      return {
        used: entry.quota_usage,
        total: entry.config?.quota_total ?? Number.POSITIVE_INFINITY,
      };
    },
    async createContainer(params) {
      return (await call("POST", `${user}/media`, Id, params)).id;
    },
    async containerStatus(containerId) {
      const status = await call("GET", encodeURIComponent(containerId), ContainerStatus, {
        fields: "status_code,status",
      });
      return { statusCode: status.status_code, status: status.status };
    },
    async publish(containerId) {
      return (await call("POST", `${user}/media_publish`, Id, { creation_id: containerId })).id;
    },
    async permalink(mediaId) {
      return (
        (await call("GET", encodeURIComponent(mediaId), Permalink, { fields: "permalink" }))
          .permalink ?? null
      );
    },
    async recentMedia() {
      return (
        await call("GET", `${user}/media`, RecentMedia, {
          fields: "id,caption,permalink,timestamp",
          limit: "10",
        })
      ).data;
    },
  };
}
