// The buckets requests draw from, named in one place: an API token's, and one person's. A person
// has one bucket (RATE_LIMIT_PER_USER) whatever surface they write from: a chat member by the id
// the product knows them by (`<platform>:<their id>`, so Discord's slash commands and its Gateway
// share one), an API user within the agent, since an API client names its users itself.
import type { Bucket } from "./admission.ts";
import type { RateRule } from "./token-bucket.ts";

/** Someone whose turns are counted: a chat member, or a user an API client names. */
export type Person =
  | { kind: "member"; userId: string; platformName: string }
  | { kind: "api"; agentId: string; userId: string };

/** The person's bucket under RATE_LIMIT_PER_USER (`rule`), and how a refusal names them. */
export function personBucket(person: Person, rule: RateRule | null): Bucket {
  return person.kind === "member"
    ? { key: `user:${person.userId}`, rule, what: `this ${person.platformName} user` }
    : {
        key: `user:rest:${person.agentId}:${person.userId}`,
        rule,
        what: `user "${person.userId}"`,
      };
}

/** An API token's bucket: every authenticated request draws from it. */
export function tokenBucket(token: { id: string; rateRule: RateRule | null }): Bucket {
  return { key: `token:${token.id}`, rule: token.rateRule, what: "this API token" };
}
