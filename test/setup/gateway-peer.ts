// vitest global setup (Node): starts the Discord Gateway stand-in once for the run and hands its
// URLs to the tests in workerd through `inject("gatewayPeer")`.
import type { TestProject } from "vitest/node";
import { startGatewayStandIn } from "../peers/gateway-stand-in.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const peer = await startGatewayStandIn();
  project.provide("gatewayPeer", { url: peer.url, controlUrl: peer.controlUrl });
  return () => peer.close();
}
