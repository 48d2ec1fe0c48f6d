// vitest global setup (Node): starts the Discord Gateway stand-ins once for the run and hands their
// URLs to the tests in workerd through `inject("gatewayPeer")` and, for the sharded bot of
// test/gateway/sharding.spec.ts, `inject("gatewayShardPeer")` (its own, so files may run at once).
import type { TestProject } from "vitest/node";
import { startGatewayStandIn } from "../peers/gateway-stand-in.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const peer = await startGatewayStandIn();
  const shardPeer = await startGatewayStandIn();
  project.provide("gatewayPeer", { url: peer.url, controlUrl: peer.controlUrl });
  project.provide("gatewayShardPeer", { url: shardPeer.url, controlUrl: shardPeer.controlUrl });
  return async () => {
    await peer.close();
    await shardPeer.close();
  };
}
