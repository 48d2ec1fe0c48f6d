// Images go to the model inline, as `data:` URLs (base64): a Discord attachment in a turn, a photo
// the agent writes a caption for. Encoded in chunks, so an 8 MiB image never builds one huge call.

export function dataUrl(contentType: string, bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return `data:${contentType};base64,${btoa(binary)}`;
}
