// One attachment ingest for the rooms, made of each platform's: an attachment goes to the ingest
// whose reference it is (Discord's CDN URLs, `telegram-file:<file_id>`, …), so a token-bearing
// download URL never has to be stored. Copies already in R2 (`r2:<key>`, a transcribed voice
// note's audio) are kept with the message and not read again. No platform code here:
// src/durable-objects.ts lists the platforms.
import type { AttachmentIngest, VoiceTranscript } from "../../objects/shared/reply-surface.ts";
import type { Attachment } from "../../runtime/ports/memory.ts";

/** An attachment already copied into R2 under this key: stored with the message, not re-read. */
export const STORED_MEDIA_PREFIX = "r2:";

export interface PlatformIngest {
  /** Whether the attachment's reference is this platform's. */
  owns(attachment: Attachment): boolean;
  ingest: AttachmentIngest;
}

/**
 * Attachments no platform claims go to the last one's ingest (Discord's, whose plain URLs
 * predate the router), which refuses what it cannot fetch.
 */
export function createAttachmentRouter(
  platforms: readonly [PlatformIngest, ...PlatformIngest[]],
): AttachmentIngest {
  const fallback = platforms[platforms.length - 1]!;
  /** Each platform's attachments, with their positions in the message's list. */
  const split = (attachments: Attachment[]) => {
    const groups = new Map<PlatformIngest, { attachment: Attachment; at: number }[]>();
    for (const [at, attachment] of attachments.entries()) {
      if (attachment.url.startsWith(STORED_MEDIA_PREFIX)) continue;
      const platform = platforms.find((p) => p.owns(attachment)) ?? fallback;
      const group = groups.get(platform) ?? [];
      group.push({ attachment, at });
      groups.set(platform, group);
    }
    return groups;
  };
  return {
    async read(attachments, keyPrefix) {
      const texts: string[] = [];
      const images: string[] = [];
      for (const [platform, group] of split(attachments)) {
        const read = await platform.ingest.read(
          group.map((item) => item.attachment),
          keyPrefix,
        );
        if (read.text !== "") texts.push(read.text);
        images.push(...read.images);
      }
      return { text: texts.join("\n\n"), images };
    },
    async transcribe(attachments, keyPrefix): Promise<VoiceTranscript | null> {
      for (const [platform, group] of split(attachments)) {
        if (!platform.ingest.transcribe) continue;
        const result = await platform.ingest.transcribe(
          group.map((item) => item.attachment),
          keyPrefix,
        );
        if (!result) continue;
        // The platform's rewritten list replaces its own attachments, in their places.
        const rewritten = [...attachments];
        for (const [i, item] of group.entries()) {
          const replaced = result.attachments[i];
          if (replaced) rewritten[item.at] = replaced;
        }
        return { ...result, attachments: rewritten };
      }
      return null;
    },
  };
}
