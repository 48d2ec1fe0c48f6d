// Starts Swagger UI on /docs (src/http/docs-page.ts). A file, not an inline script, because the
// page's Content-Security-Policy runs scripts from this worker only. The spec's address comes from
// the page; swagger-ui-bundle.js, loaded just before this file, defines SwaggerUIBundle.
const root = document.getElementById("swagger-ui");
window.ui = globalThis.SwaggerUIBundle({ dom_id: "#swagger-ui", url: root.dataset.specUrl });
