// The parts of a Discord interaction the bot reads, validated with zod after the signature check.
// Unknown fields pass (Discord adds fields over time); missing or mistyped ones are a 400.
import { z } from "zod";

export const InteractionType = {
  PING: 1,
  APPLICATION_COMMAND: 2,
  MESSAGE_COMPONENT: 3,
  AUTOCOMPLETE: 4,
  MODAL_SUBMIT: 5,
} as const;
export const ResponseType = {
  PONG: 1,
  MESSAGE: 4,
  DEFERRED_MESSAGE: 5,
  UPDATE_MESSAGE: 7,
  AUTOCOMPLETE_RESULT: 8,
  /** Opens a modal (a form) for the person who clicked. */
  MODAL: 9,
} as const;
/** Message flag: only the invoking user sees it. */
export const EPHEMERAL = 1 << 6;

const Snowflake = z.string().regex(/^\d{1,20}$/, "a Discord id (snowflake)");

const User = z.object({
  id: Snowflake,
  username: z.string().max(100),
  global_name: z.string().max(100).nullish(),
  bot: z.boolean().optional(),
});

const OptionValue = z.object({
  name: z.string().max(32),
  type: z.number().int(),
  value: z.union([z.string(), z.number(), z.boolean()]).optional(),
  focused: z.boolean().optional(),
});
/** An option, or a subcommand (type 1) with its own options (`/settings respond mode:…`). */
const Option = OptionValue.extend({ options: z.array(OptionValue).max(25).optional() });

const ResolvedAttachment = z.object({
  id: Snowflake,
  filename: z.string().max(1024),
  size: z.number().int().nonnegative(),
  url: z.url(),
  content_type: z.string().max(255).optional(),
});

const CommandData = z.object({
  name: z.string().max(32),
  options: z.array(Option).max(25).optional(),
  resolved: z
    .object({ attachments: z.record(z.string(), ResolvedAttachment).optional() })
    .optional(),
});

const ComponentData = z.object({
  custom_id: z.string().max(100),
  component_type: z.number().int(),
});

/** A modal's submitted values: action rows of text inputs, each with its custom_id and value. */
const ModalData = z.object({
  custom_id: z.string().max(100),
  components: z
    .array(
      z.object({
        type: z.number().int(),
        components: z
          .array(
            z.object({
              type: z.number().int(),
              custom_id: z.string().max(100),
              value: z.string().max(4_000).optional(),
            }),
          )
          .max(5),
      }),
    )
    .max(5),
});

const Base = z.object({
  id: Snowflake,
  application_id: Snowflake,
  token: z.string().min(1).max(1_000),
  guild_id: Snowflake.optional(),
  channel_id: Snowflake.optional(),
  member: z
    .object({
      user: User,
      permissions: z.string().regex(/^\d+$/).optional(),
      /** The member's roles in the server (role-gated tools). */
      roles: z.array(Snowflake).max(250).default([]),
    })
    .optional(),
  user: User.optional(),
  /** The channel it was used in; a thread's (types 10-12) parent_id is the channel it is in. */
  channel: z
    .object({ id: Snowflake, type: z.number().int(), parent_id: Snowflake.nullish() })
    .optional()
    .catch(undefined),
});

/** The channel a thread belongs to, when the interaction was used in a thread; else null. */
export function threadParentOf(interaction: {
  channel?: { type: number; parent_id?: string | null } | undefined;
}): string | null {
  const channel = interaction.channel;
  return channel && [10, 11, 12].includes(channel.type) ? (channel.parent_id ?? null) : null;
}

export const Interaction = z.discriminatedUnion("type", [
  z.object({ type: z.literal(InteractionType.PING), id: Snowflake, application_id: Snowflake }),
  Base.extend({ type: z.literal(InteractionType.APPLICATION_COMMAND), data: CommandData }),
  Base.extend({ type: z.literal(InteractionType.AUTOCOMPLETE), data: CommandData }),
  Base.extend({ type: z.literal(InteractionType.MESSAGE_COMPONENT), data: ComponentData }),
  Base.extend({ type: z.literal(InteractionType.MODAL_SUBMIT), data: ModalData }),
]);
export type Interaction = z.infer<typeof Interaction>;
export type CommandInteraction = Extract<Interaction, { type: 2 | 4 }>;
export type ComponentInteraction = Extract<Interaction, { type: 3 }>;
export type ModalSubmitInteraction = Extract<Interaction, { type: 5 }>;
export type ResolvedAttachment = z.infer<typeof ResolvedAttachment>;

/** Who invoked it: `member.user` in a server, `user` in a DM. */
export function invoker(
  interaction: CommandInteraction | ComponentInteraction | ModalSubmitInteraction,
): z.infer<typeof User> | undefined {
  return interaction.member?.user ?? interaction.user;
}

/** The value a modal submitted for one of its text inputs. */
export function modalValue(interaction: ModalSubmitInteraction, field: string): string | undefined {
  for (const row of interaction.data.components)
    for (const input of row.components) if (input.custom_id === field) return input.value;
  return undefined;
}

/** The subcommand used (`/settings show`: "show") and its options; null for a plain command. */
export function subcommand(
  interaction: CommandInteraction,
): { name: string; options: ReadonlyArray<z.infer<typeof OptionValue>> } | null {
  const sub = interaction.data.options?.find((option) => option.type === 1);
  return sub ? { name: sub.name, options: sub.options ?? [] } : null;
}

export function stringOption(interaction: CommandInteraction, name: string): string | undefined {
  const value = interaction.data.options?.find((option) => option.name === name)?.value;
  return typeof value === "string" ? value : undefined;
}
