// vitest global setup (Node): starts the Discord Gateway stand-ins once for the run and hands their
// URLs to the tests in workerd through `inject("gatewayPeer")` and, for the sharded bot of
// test/gateway/sharding.spec.ts, `inject("gatewayShardPeer")`, for test/gateway/auto-thread.spec.ts
// `inject("gatewayThreadPeer")`, for test/gateway/message-filter.spec.ts `inject("gatewayFilterPeer")`
// (each file its own, so files may run at once).
import type { TestProject } from "vitest/node";
import { startGatewayStandIn } from "../peers/gateway-stand-in.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const peer = await startGatewayStandIn();
  const shardPeer = await startGatewayStandIn();
  const threadPeer = await startGatewayStandIn();
  const filterPeer = await startGatewayStandIn();
  project.provide("gatewayPeer", { url: peer.url, controlUrl: peer.controlUrl });
  project.provide("gatewayShardPeer", { url: shardPeer.url, controlUrl: shardPeer.controlUrl });
  project.provide("gatewayThreadPeer", { url: threadPeer.url, controlUrl: threadPeer.controlUrl });
  project.provide("gatewayFilterPeer", { url: filterPeer.url, controlUrl: filterPeer.controlUrl });
  return async () => {
    await peer.close();
    await shardPeer.close();
    await threadPeer.close();
    await filterPeer.close();
  };
}
