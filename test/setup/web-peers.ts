// vitest global setup (Node): starts the loopback web (pages and a search API stand-in) once for
// the run and hands its URLs to the tests in workerd through `inject("webPeers")`.
import type { TestProject } from "vitest/node";
import { startWebPeers } from "../peers/web-peers.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const peers = await startWebPeers();
  project.provide("webPeers", { baseUrl: peers.baseUrl, searchBase: peers.searchBase });
  return () => peers.close();
}
