// Who the Gateway stand-in says the bot is, where: shared by the stand-in (Node) and the tests
// (workerd), so it imports nothing.
export const STAND_IN_BOT = { id: "990000000000000001", username: "edge-bot" };
export const STAND_IN_GUILD = "900000000000000001";
export const STAND_IN_BOT_ROLE = "980000000000000001";
