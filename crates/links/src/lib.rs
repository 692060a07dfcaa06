//! Link extraction for a web crawler: the hrefs, `<base>`, canonical URL and robots
//! directives of an HTML page, and, when asked, what it needs to render (its page
//! requisites, style sheets' own included), in time linear in its size, whatever its bytes.
//!
//! [`extract`] takes a fetched [`Page`] and [`Options`] and returns the page's [`Extracted`]
//! links as written; the caller resolves them against [`Extracted::base`] (and, in the
//! crawler, canonicalizes them). Inside, by job:
//!
//! * [`decode`]: the page's character encoding and text (`charset.rs`);
//! * [`tokenize`]: a hand-written tokenizer that follows the WHATWG tokenizer states
//!   (`tokenizer.rs`), helped by a simulation of the little of the tree builder that
//!   decides what is markup (`tree.rs`: SVG, MathML, `<template>`), and decoding character
//!   references (`entities.rs`);
//! * [`Sink`]: what the tokenizer hands each start tag to, as a [`Tag`] of an [`Element`];
//! * [`Collector`]: the sink that applies the link rules below (`rules.rs`), and with
//!   [`Options::requisites`] the requisite rules (`requisites.rs`);
//! * [`stylesheet`]: a style sheet's `url()`s and `@import`s (`css.rs`, as much of CSS's
//!   tokenizer as tells them from comments and strings).
//!
//! The crate knows nothing of HTTP: it parses URLs with the [`url`] crate and decodes with
//! `encoding_rs`. Why a hand-written tokenizer rather than html5ever, html5gum or lol_html,
//! with the measurements, is in the crate's README.
//!
//! # Example
//!
//! ```
//! use links::{Options, Page, extract};
//!
//! let url = url::Url::parse("https://example.com/dir/page.html")?;
//! let page = Page {
//!     url: &url,
//!     body: b"<a href=child/>c</a><!-- <a href=no> --><a href=/ads rel=nofollow>",
//!     content_type: Some("text/html; charset=utf-8"),
//! };
//! let out = extract(&page, &Options::default());
//! assert_eq!(out.links, ["child/"]);
//! assert_eq!(out.nofollow, 1);
//! assert_eq!(out.base.join(&out.links[0])?.as_str(), "https://example.com/dir/child/");
//! # Ok::<(), url::ParseError>(())
//! ```
//!
//! # Rules
//!
//! - **Links** come from `<a href>` and `<area href>` only (not `<link>`, `<img>`, `<script>`,
//!   `<iframe>`, nor `<meta http-equiv=refresh>`), in document order, trimmed of the leading
//!   and trailing control characters and spaces that the URL parser would strip anyway. An
//!   `<a href>` inside inline SVG or MathML counts too (it is a link in a browser).
//!   Empty hrefs are skipped. A pure fragment (`#top`) names the page itself, so it is skipped
//!   and not counted, unless `<base>` points at another document: then the first one is kept
//!   (in its place) because it names that document. Schemes are not filtered: `mailto:` and
//!   `javascript:` hrefs are returned, and the caller's canonicalizer rejects and counts them.
//! - **`<base href>`**: the first `<base>` element with an `href`, resolved against the page
//!   URL, is the base for every link (also links before it, as in browsers); if it does not
//!   parse, the page URL is the base.
//! - **`rel=nofollow`**: a link whose `rel` has the token `nofollow` (ASCII case-insensitive,
//!   whitespace-separated) is not returned unless [`Options::follow_nofollow`]; it is counted
//!   in [`Extracted::nofollow`].
//! - **`<meta name=robots content=nofollow>`** (also `none`; the name and the tokens are ASCII
//!   case-insensitive, separated by commas or spaces) anywhere in the page sets
//!   [`Extracted::meta_nofollow`], and then no link is returned (all are counted in
//!   `nofollow`) unless `follow_nofollow`. Only the generic `robots` name is read.
//! - **Canonical**: the first `<link rel=canonical>` with a non-empty `href`, resolved against
//!   the base; `None` if it does not parse.
//! - **Cap**: the first [`Options::max_links`] links are returned; the others are counted in
//!   [`Extracted::over_cap`]. Nofollow links do not use up the cap.
//! - **Page requisites**, with [`Options::requisites`], in [`Extracted::requisites`]: what a
//!   browser loads to show the page, from HTML elements: `<img>` `src` and `srcset` (also
//!   `<image>`, which parsers rename), `<source>` `src` and `srcset` (of `<picture>`,
//!   `<video>`, `<audio>`), `<script src>`, `<video>`/`<audio>` `src` and `poster`, `<track
//!   src>`, `<embed src>`, `<object data>`, `<input type=image src>`, `<link href>` whose
//!   `rel` has `stylesheet`, `icon`, `apple-touch-icon`, `preload` or `modulepreload`; and
//!   from any element, the `url()`s of its `style` attribute and its `background`; and the
//!   `url()`s and `@import`s of `<style>` elements. Each once, in document order, trimmed;
//!   `data:` URLs and pure fragments (an SVG's `url(#id)`) are skipped; capped at
//!   [`Options::max_links`] (the rest counted in `over_cap`). `rel=nofollow` and the robots
//!   meta tag do not apply: they are about links to follow, and a browser loads these all
//!   the same. Not read: `<iframe>` (a page, followed as a link), SVG's `<image href>`,
//!   CSS's `image-set()` strings, and what scripts load.
//! - **Character encoding**, in the order browsers use: a byte order mark (UTF-8 or UTF-16)
//!   wins; else the `charset=` of the Content-Type header; else a `<meta charset>` or
//!   `<meta http-equiv=Content-Type content="...; charset=...">` found by the HTML standard's
//!   prescan of the first 1024 bytes; else UTF-8. (The BOM comes first, as in browsers and
//!   `encoding_rs`: a page with a UTF-8 BOM served as `charset=windows-1252` is UTF-8.) The
//!   body is decoded with `encoding_rs`, lossily, so malformed bytes become U+FFFD and a
//!   windows-1252 or Shift_JIS page still yields its links. Non-ASCII characters in hrefs are
//!   returned as text; the URL parser percent-encodes them (as UTF-8) when resolving. Browsers
//!   encode the *query* of such a link in the page's encoding instead; [`Extracted::encoding`]
//!   tells the caller which encoding that was, should it want to do the same.
//!
//! # The tokenizer
//!
//! It follows the WHATWG tokenizer states that decide where tags begin and end and what an
//! attribute value is:
//!
//! - tags and their attributes (quoted, unquoted, missing values; `/>`; the first of
//!   duplicate attributes wins; a tag cut off by the end of the input is dropped);
//! - comments (`<!-->`, `<!--->`, `--!>`), DOCTYPEs, bogus comments (`<?`, `</ x>`, `<!x>`),
//!   and CDATA sections inside SVG/MathML;
//! - the text-only elements the tree builder switches the tokenizer into: `<script>` (with
//!   the `<!--`/`<script>` escape states), `<style>`, `<xmp>`, `<iframe>`, `<noembed>`,
//!   `<noframes>` (raw text), `<title>`, `<textarea>` (RCDATA) and `<plaintext>`;
//! - character references in attribute values: numeric ones exactly as specified, and named
//!   ones from HTML 4's 252 names plus `&apos;`, which include every name that may appear
//!   without its `;` (so `?a=1&copy=2` stays as written, as in browsers). The ~1,900 names
//!   that HTML5 added (`&NewLine;`, `&bigstar;`, ...) are left as written.
//!
//! It models only as much of the tree builder as affects those decisions: inline `<svg>` and
//! `<math>` (where `<title>`, `<style>` and `<script>` are ordinary elements, except inside
//! the integration points `<foreignObject>`, `<desc>`, `<title>`, `<mi>`, ...; the tags that
//! break out of them; the end tags of the HTML elements around them), and `<template>`,
//! whose contents are inert in a browser and so yield nothing here. `<noscript>` is parsed
//! as markup, as a browser with scripting disabled would: its links are the ones meant for
//! agents that do not run scripts. Everything else the tree builder does (implied and
//! misnested tags, foster parenting out of tables, ...) moves elements around, or clones an
//! `<a>` (reported once here), but does not remove an `<a href>` from the document, so it
//! does not change the links. The known differences from a browser are listed, case by
//! case, in the test `known_differences_from_a_browser` (`tests/agreement.rs`).
//!
//! Cost is linear in the input: every state advances through the input, attributes are not
//! stored (only the first `href`, `rel`, `name` and `content` of the tags that use them, and
//! for a sink that wants requisites the few attributes that name them), and
//! the SVG/MathML element stack is capped at 64 entries. Nothing indexes past the end of the
//! input, so no byte sequence panics.

mod charset;
mod css;
mod entities;
mod extract;
mod page;
mod requisites;
mod rules;
mod scan;
mod sink;
mod token;
mod tokenizer;
mod tree;

pub use charset::decode;
pub use extract::{extract, stylesheet};
pub use page::{Extracted, Options, Page};
pub use rules::Collector;
pub use sink::{Element, Sink, Tag, Value};
pub use tokenizer::tokenize;
