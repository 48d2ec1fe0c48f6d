// The API reference page at /docs: Swagger UI, loaded from this worker's static assets (copied out
// of swagger-ui-dist by scripts/vendor-docs-viewer.mjs), never from a CDN. Its Content-Security-
// Policy lets it run only this worker's scripts and styles, talk only to this worker, and be framed
// by no page (clickjacking); public/docs-viewer.js starts the viewer, as no inline script may run.
import { swaggerUI } from "@hono/swagger-ui";
import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";

/** Where public/vendor/swagger-ui-dist/ is served (@hono/swagger-ui adds `/swagger-ui-dist/…`). */
export const DOCS_VIEWER_BASE = "/vendor";
/** The static script that starts Swagger UI (public/docs-viewer.js). */
export const DOCS_VIEWER_START = "/docs-viewer.js";

const SELF = "'self'";

/** The page's headers: the same policy public/_headers gives the playground. */
export const docsHeaders = (): MiddlewareHandler =>
  secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: [SELF],
      scriptSrc: [SELF],
      styleSrc: [SELF],
      // Swagger UI's stylesheet draws its icons as data: SVGs.
      imgSrc: [SELF, "data:"],
      // The spec and "Try it out" requests go to this worker only.
      connectSrc: [SELF],
      objectSrc: ["'none'"],
      baseUri: ["'none'"],
      formAction: [SELF],
      frameAncestors: ["'none'"],
    },
    // For browsers that predate frame-ancestors.
    xFrameOptions: "DENY",
    // HSTS is the deployment's choice (its domain, its subdomains), not one page's.
    strictTransportSecurity: false,
  });

const escapeAttribute = (value: string) =>
  value.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;");

/** The page rendering `specUrl`; its headers come from docsHeaders(). */
export function docsPage(specUrl: string): MiddlewareHandler {
  return swaggerUI({
    url: specUrl,
    title: "edge-agents API",
    baseUrl: DOCS_VIEWER_BASE,
    manuallySwaggerUIHtml: (asset) =>
      [
        `<div id="swagger-ui" data-spec-url="${escapeAttribute(specUrl)}"></div>`,
        ...asset.css.map((href) => `<link rel="stylesheet" href="${escapeAttribute(href)}" />`),
        ...[...asset.js, DOCS_VIEWER_START].map(
          (src) => `<script src="${escapeAttribute(src)}"></script>`,
        ),
      ].join("\n"),
  });
}
