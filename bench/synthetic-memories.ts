// Synthetic memories for the memory benchmark's scale runs: everyday sentences from templates and
// word lists, mixed types (messages, facts, profiles, lore, summaries) across 200 rooms and 300
// people, and questions about them. A seeded PRNG makes every run ingest and ask the same things,
// so latency figures compare across machines and commits.

const ROOMS = 200;
const PEOPLE = 300;
const START_MS = Date.UTC(2026, 0, 1);
const STEP_MS = 60_000;

const FIRST = [
  "Ana",
  "Ben",
  "Chen",
  "Dana",
  "Emeka",
  "Farah",
  "Goran",
  "Hana",
  "Ines",
  "Jon",
  "Kofi",
  "Lena",
  "Mateo",
  "Nadia",
  "Omar",
  "Priya",
  "Quinn",
  "Rosa",
  "Sven",
  "Tariq",
  "Uma",
  "Viktor",
  "Wen",
  "Ximena",
  "Yusuf",
  "Zoe",
  "Aiko",
  "Bruno",
  "Carmen",
  "Dmitri",
];
const LAST = [
  "Costa",
  "Okafor",
  "Nguyen",
  "Schmidt",
  "Haddad",
  "Kowalski",
  "Silva",
  "Tanaka",
  "Moreau",
  "Larsen",
];

const SLOTS: Readonly<Record<string, readonly string[]>> = {
  activity: [
    "went hiking",
    "baked sourdough bread",
    "ran a half marathon",
    "painted the spare room",
    "adopted a rescue dog",
    "started a pottery class",
    "fixed the old bicycle",
    "planted tomatoes",
    "visited grandma",
    "learned to surf",
    "joined a choir",
    "moved into a new flat",
    "finished a long novel",
    "cooked a curry for friends",
    "lost the house keys",
    "tried rock climbing",
    "sold the car",
    "volunteered at the shelter",
  ],
  place: [
    "in Lisbon",
    "at the farmers' market",
    "near the lake",
    "in the old town",
    "at work",
    "in the mountains",
    "by the harbour",
    "at the community centre",
    "in Kyoto",
    "at a friend's place",
    "in the park",
    "downtown",
    "at the library",
    "on the coast",
  ],
  time: [
    "last weekend",
    "yesterday",
    "this morning",
    "a few days ago",
    "over the holidays",
    "last summer",
    "on Friday night",
    "two weeks ago",
    "in March",
    "after work",
  ],
  feeling: [
    "exhausting but worth it",
    "so much fun",
    "a bit stressful",
    "really relaxing",
    "harder than I expected",
    "the highlight of my month",
    "a total disaster",
    "surprisingly easy",
  ],
  object: [
    "guitar",
    "camera",
    "garden",
    "sourdough starter",
    "telescope",
    "kayak",
    "sketchbook",
    "sewing machine",
    "record collection",
    "espresso machine",
    "bonsai tree",
    "tent",
    "piano",
    "aquarium",
  ],
  job: [
    "nurse",
    "software engineer",
    "teacher",
    "carpenter",
    "chef",
    "graphic designer",
    "accountant",
    "firefighter",
    "veterinarian",
    "journalist",
    "architect",
    "pharmacist",
    "electrician",
    "librarian",
    "photographer",
  ],
  food: ["peanuts", "shellfish", "gluten", "dairy", "strawberries", "eggs", "sesame"],
  pet: ["cat", "golden retriever", "parrot", "rabbit", "tortoise", "beagle", "hamster"],
  petName: ["Luna", "Max", "Biscuit", "Pepper", "Mochi", "Ziggy", "Olive", "Rocket"],
  skill: [
    "Spanish",
    "the violin",
    "chess",
    "watercolour painting",
    "Japanese",
    "woodworking",
    "salsa dancing",
    "programming",
    "photography",
    "knitting",
  ],
  hobby: [
    "birdwatching",
    "trail running",
    "board games",
    "baking",
    "gardening",
    "climbing",
    "cycling",
    "yoga",
    "fishing",
    "jazz piano",
  ],
  topic: [
    "a new job offer",
    "wedding plans",
    "a broken laptop",
    "the move to a new city",
    "training for a race",
    "a family reunion",
    "a difficult landlord",
    "holiday plans",
    "a health scare",
    "the book club's next pick",
  ],
  plan: [
    "visit Portugal",
    "sign up for a marathon",
    "repaint the kitchen",
    "ask for a raise",
    "adopt a second cat",
    "start a podcast",
    "take a cooking course",
    "go camping in the fjords",
  ],
  city: [
    "Lisbon",
    "Osaka",
    "Toronto",
    "Nairobi",
    "Melbourne",
    "Edinburgh",
    "Bogota",
    "Prague",
    "Seattle",
    "Accra",
  ],
  adjective: [
    "cheerful",
    "quiet",
    "curious",
    "meticulous",
    "adventurous",
    "patient",
    "funny",
    "thoughtful",
  ],
  opener: [
    "",
    "",
    "",
    "Honestly, ",
    "So, ",
    "Oh, and ",
    "By the way, ",
    "Funny story: ",
    "Quick update: ",
  ],
  closer: [
    "",
    "",
    "",
    " Anyway, how are you?",
    " More soon.",
    " What do you think?",
    " I'll tell you more later.",
    " Wish me luck!",
  ],
};

const TEMPLATES = {
  user: [
    "{opener}I {activity} {place} {time}, it was {feeling}.{closer}",
    "{opener}Guess what, I {activity} {time}! {other} came along too.{closer}",
    "{opener}Have you ever tried {hobby}? I've been into it since {time}.{closer}",
    "{opener}My {object} broke {time}, do you know anyone who repairs them?",
    "{opener}I'm thinking of moving to {city} next year, maybe to work as a {job}.{closer}",
    "{opener}Can you remind me what I told you about {topic}?",
    "{opener}{other} keeps asking me to {plan} with them.{closer}",
    "{opener}Work as a {job} has been intense lately, I need a break {place}.{closer}",
  ],
  agent: [
    "Thanks for telling me, {name}! How is the {object} doing?",
    "You mentioned {topic} {time}. How did it go, {name}?",
    "I remember you wanted to {plan}. Any progress, {name}?",
    "Good luck with {hobby}, {name}! Did {other} join you {place}?",
    "Noted, {name}: you {activity} {time}. Want a reminder about {topic}?",
  ],
  fact: [
    "{name} works as a {job} in {city}.",
    "{name} is allergic to {food}.",
    "{name} has a {pet} called {petName}.",
    "{name} is learning {skill}.",
    "{name} wants to {plan} this year.",
    "{name}'s favourite hobby is {hobby}.",
    "{name} grew up in {city}.",
  ],
  description: [
    "{fullName} is a {adjective} {job} from {city} who enjoys {hobby} and has a {pet} named {petName}.",
  ],
  lore: [
    "The agent once spent a winter in {city} learning {skill}.",
    "The agent keeps a {object} on its desk, a gift from an old friend in {city}.",
  ],
  summary: [
    "{name} talked about {topic} and {hobby}; they {activity} {time} and plan to {plan}.",
    "{name} and {other} compared notes on {topic}; {name} is learning {skill} and works as a {job}.",
  ],
  query: [
    "What does {name} do for work?",
    "Where did {name} grow up?",
    "Who has a {pet}?",
    "What is {name} allergic to?",
    "What did {name} say about {topic}?",
    "Who wants to {plan}?",
    "What is {name} learning these days?",
    "Who {activity} {place}?",
    "What happened to the {object}?",
    "Who enjoys {hobby} in {city}?",
  ],
} as const;

export interface SyntheticCorpus {
  /** `size` memories for POST /memories, oldest first, one minute apart. */
  memories(agentId: string): Record<string, unknown>[];
  /** Questions in the style of a person asking the agent what it remembers. */
  queries(count: number): string[];
}

export function createCorpus(size: number, seed = 20261122): SyntheticCorpus {
  return {
    memories(agentId) {
      const random = createRandom(seed ^ size);
      return Array.from({ length: size }, (_, n) => syntheticMemory(random, agentId, n));
    },
    queries(count) {
      const random = createRandom(seed ^ 0x5eed);
      return Array.from({ length: count }, () =>
        fill(random, pick(random, TEMPLATES.query), person(random)),
      );
    },
  };
}

function syntheticMemory(
  random: () => number,
  agentId: string,
  n: number,
): Record<string, unknown> {
  const who = person(random);
  const roomId = `room-${Math.floor(random() * ROOMS)}`;
  const base = { agentId, createdAt: START_MS + n * STEP_MS };
  const roll = random();
  if (roll < 0.7) {
    const role = random() < 0.6 ? "user" : "agent";
    const text = fill(
      random,
      pick(random, role === "user" ? TEMPLATES.user : TEMPLATES.agent),
      who,
    );
    return {
      ...base,
      type: "message",
      roomId,
      userId: who.userId,
      userName: who.fullName,
      role,
      text,
    };
  }
  if (roll < 0.84)
    return {
      ...base,
      type: "fact",
      userId: who.userId,
      text: fill(random, pick(random, TEMPLATES.fact), who),
    };
  if (roll < 0.92)
    return {
      ...base,
      type: "summary",
      roomId,
      text: fill(random, pick(random, TEMPLATES.summary), who),
    };
  if (roll < 0.96)
    return {
      ...base,
      type: "description",
      userId: who.userId,
      text: fill(random, pick(random, TEMPLATES.description), who),
    };
  return { ...base, type: "lore", text: fill(random, pick(random, TEMPLATES.lore), who) };
}

interface Person {
  userId: string;
  name: string;
  fullName: string;
  other: string;
}

function person(random: () => number): Person {
  const i = Math.floor(random() * PEOPLE);
  const first = FIRST[i % FIRST.length]!;
  return {
    userId: `user-${i}`,
    name: first,
    fullName: `${first} ${LAST[Math.floor(i / FIRST.length) % LAST.length]!}`,
    other: pick(random, FIRST),
  };
}

function fill(random: () => number, template: string, who: Person): string {
  const fixed: Record<string, string> = {
    name: who.name,
    fullName: who.fullName,
    other: who.other,
  };
  return template.replace(
    /\{(\w+)\}/g,
    (_, slot: string) => fixed[slot] ?? pick(random, SLOTS[slot] ?? [slot]),
  );
}

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)]!;
}

/** SplitMix32-style generator: tiny, seedable, and good enough to vary sentences. */
function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}
