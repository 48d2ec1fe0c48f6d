// The alternative the web reader was measured against (bench/web-reader.ts): HTMLRewriter alone,
// streaming, no DOM. It removes what is never content (scripts, styles, nav, header, footer,
// aside, forms, elements named like ads) and writes markdown markers around headings, paragraphs,
// list items, emphasis and links, then drops every other tag. It cannot judge which block is the
// article, so sidebars and related-story lists that are not named as such stay in.
const REMOVED =
  "script,style,noscript,template,iframe,object,embed,svg,canvas,form,button,nav,header,footer,aside,img,picture,video,audio";
const CHROME =
  /(^|[\s_-])(nav|menu|footer|sidebar|cookie|banner|advert|ads?|promo|share|social|subscribe|newsletter|comments?)([\s_-]|$)/i;

export async function rewriterMarkdown(html: string, url: string): Promise<string> {
  let title = "";
  const rewriter = new HTMLRewriter()
    .on(REMOVED, {
      element(element) {
        element.remove();
      },
    })
    .on("[class],[id]", {
      element(element) {
        const names = `${element.getAttribute("class") ?? ""} ${element.getAttribute("id") ?? ""}`;
        if (CHROME.test(names)) element.remove();
      },
    })
    .on("title", {
      text(chunk) {
        title += chunk.text;
      },
      element(element) {
        element.remove();
      },
    })
    .on("h1,h2,h3,h4,h5,h6", {
      element(element) {
        const level = Number(element.tagName.slice(1));
        element.before(`\n\n${"#".repeat(level)} `);
        element.after("\n\n");
        element.removeAndKeepContent();
      },
    })
    .on("p,div,section,article,main,blockquote,pre,table,tr", {
      element(element) {
        element.before("\n\n");
        element.after("\n\n");
        element.removeAndKeepContent();
      },
    })
    .on("br", {
      element(element) {
        element.replace("\n");
      },
    })
    .on("li", {
      element(element) {
        element.before("\n* ");
        element.removeAndKeepContent();
      },
    })
    .on("strong,b", {
      element(element) {
        element.before("**");
        element.after("**");
        element.removeAndKeepContent();
      },
    })
    .on("em,i", {
      element(element) {
        element.before("_");
        element.after("_");
        element.removeAndKeepContent();
      },
    })
    .on("a", {
      element(element) {
        const href = element.getAttribute("href");
        let target = "";
        try {
          target = href ? new URL(href, url).href : "";
        } catch {
          target = "";
        }
        if (target.startsWith("http")) {
          element.before("[");
          element.after(`](${target})`);
        }
        element.removeAndKeepContent();
      },
    })
    .on("*", {
      element(element) {
        element.removeAndKeepContent();
      },
    });
  const text = await rewriter.transform(new Response(html)).text();
  const body = decodeEntities(text)
    .split("\n")
    .map((line) => line.replace(/[ \t]+/g, " ").trim())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return title ? `# ${decodeEntities(title).trim()}\n\n${body}` : body;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&#x([0-9a-f]+);/gi, (_, code: string) =>
      String.fromCodePoint(Number.parseInt(code, 16)),
    )
    .replace(/&nbsp;/g, " ")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&amp;/g, "&");
}
