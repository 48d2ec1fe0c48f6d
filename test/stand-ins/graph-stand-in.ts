// The Instagram Graph API's publishing endpoints as a fetch handler, for tests: the publishing
// limit, containers (photo, reel, carousel items and parent) with a scripted sequence of status
// codes, media_publish (only for FINISHED containers; a container publishes once), permalinks and
// recent media. Like Meta, it fetches each media URL when the container is created (through
// `fetchMedia`), and the container ends in ERROR when that fails. Scripted Graph errors come next.

export interface GraphFailure {
  status: number;
  code: number;
  subcode?: number;
  transient?: boolean;
  message?: string;
}

interface Container {
  id: string;
  params: Record<string, string>;
  statuses: string[];
  published: boolean;
}

export interface GraphStandIn {
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** Status codes the next containers report, one list per container (default: FINISHED at once). */
  statusSequences: string[][];
  quota: { used: number; total: number };
  failNext(...failures: GraphFailure[]): void;
  readonly containers: Container[];
  readonly published: Array<{ mediaId: string; containerId: string; caption: string }>;
  /** What each media URL fetch returned. */
  readonly mediaFetches: Array<{ url: string; status: number; contentType: string | null }>;
  readonly calls: string[];
}

export function createGraphStandIn(options: {
  userId: string;
  fetchMedia: (url: string) => Promise<Response>;
}): GraphStandIn {
  let nextId = 17_900_000_000_000_000n;
  const failures: GraphFailure[] = [];
  const standIn: GraphStandIn = {
    statusSequences: [],
    quota: { used: 0, total: 100 },
    containers: [],
    published: [],
    mediaFetches: [],
    calls: [],
    failNext: (...more) => void failures.push(...more),
    async fetch(input, init) {
      const request =
        input instanceof Request && init === undefined ? input : new Request(input, init);
      const url = new URL(request.url);
      const path = url.pathname.replace(/^\/v\d+\.\d+\//, "/");
      standIn.calls.push(`${request.method} ${path}`);
      if (request.headers.get("authorization") !== "Bearer test-instagram-token") {
        return error(400, { code: 190, message: "Invalid OAuth access token." });
      }
      const failure = failures.shift();
      if (failure)
        return error(failure.status, {
          code: failure.code,
          error_subcode: failure.subcode,
          is_transient: failure.transient,
          message: failure.message ?? "scripted failure",
        });
      const form =
        request.method === "POST"
          ? new URLSearchParams(await request.text())
          : new URLSearchParams();
      const user = `/${options.userId}`;

      if (request.method === "GET" && path === `${user}/content_publishing_limit`) {
        return Response.json({
          data: [
            {
              quota_usage: standIn.quota.used,
              config: { quota_total: standIn.quota.total, quota_duration: 86_400 },
            },
          ],
        });
      }
      if (request.method === "POST" && path === `${user}/media`) {
        const params = Object.fromEntries(form);
        const id = String(nextId++);
        const statuses = [...(standIn.statusSequences.shift() ?? ["FINISHED"])];
        const mediaUrl = params.image_url ?? params.video_url;
        if (params.media_type !== "CAROUSEL") {
          if (!mediaUrl)
            return error(400, { code: 100, message: "Missing image_url or video_url" });
          const fetched = await options.fetchMedia(mediaUrl);
          standIn.mediaFetches.push({
            url: mediaUrl,
            status: fetched.status,
            contentType: fetched.headers.get("content-type"),
          });
          if (fetched.status !== 200) statuses.splice(0, statuses.length, "ERROR");
        } else {
          const children = (params.children ?? "").split(",");
          if (children.length < 2 || children.length > 10)
            return error(400, { code: 100, message: "A carousel needs 2 to 10 children" });
        }
        standIn.containers.push({ id, params, statuses, published: false });
        return Response.json({ id });
      }
      if (request.method === "POST" && path === `${user}/media_publish`) {
        const container = standIn.containers.find((c) => c.id === form.get("creation_id"));
        if (!container) return error(400, { code: 100, message: "Unknown creation_id" });
        if (container.published)
          return error(400, {
            code: 9007,
            error_subcode: 2207027,
            message: "The media has already been published",
          });
        if (status(container, false) !== "FINISHED")
          return error(400, {
            code: 9007,
            error_subcode: 2207027,
            message: "Media is not ready for publishing",
          });
        container.published = true;
        const mediaId = String(nextId++);
        standIn.published.push({
          mediaId,
          containerId: container.id,
          caption: container.params.caption ?? "",
        });
        return Response.json({ id: mediaId });
      }
      if (request.method === "GET" && path === `${user}/media`) {
        return Response.json({
          data: [...standIn.published].reverse().map((p) => ({
            id: p.mediaId,
            caption: p.caption,
            permalink: `https://www.instagram.com/p/${p.mediaId}/`,
          })),
        });
      }
      const id = path.slice(1);
      const container = standIn.containers.find((c) => c.id === id);
      if (request.method === "GET" && container) {
        return Response.json({ status_code: status(container, true), id });
      }
      const media = standIn.published.find((p) => p.mediaId === id);
      if (request.method === "GET" && media)
        return Response.json({ permalink: `https://www.instagram.com/p/${media.mediaId}/`, id });
      return error(404, { code: 803, message: `unknown path ${path}` });
    },
  };
  return standIn;
}

/** A container's status now; reading it moves the scripted sequence on. */
function status(container: Container, advance: boolean): string {
  if (container.published) return "PUBLISHED";
  const current = container.statuses[0] ?? "FINISHED";
  if (advance && container.statuses.length > 1) container.statuses.shift();
  return current;
}

function error(
  statusCode: number,
  body: { code: number; error_subcode?: number; is_transient?: boolean; message: string },
): Response {
  return Response.json(
    { error: { type: "OAuthException", fbtrace_id: "Atrace", ...body } },
    { status: statusCode },
  );
}
