//! Character references in attribute values: numeric ones exactly as specified, and named
//! ones from HTML 4's 252 names plus `&apos;`, which include every name that may appear
//! without its `;` (so `?a=1&copy=2` stays as written, as in browsers). The ~1,900 names
//! that HTML5 added (`&NewLine;`, `&bigstar;`, ...) are left as written.

use std::borrow::Cow;

use crate::scan::{DECODE, is};

/// An attribute value with character references decoded, carriage returns normalized and
/// NULs replaced, as the tokenizer's attribute value states produce it.
#[inline]
pub(crate) fn decode_attribute(raw: &str) -> Cow<'_, str> {
    let b = raw.as_bytes();
    if !b.iter().any(|&c| is(c, DECODE)) {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let (mut i, mut done) = (0, 0);
    while i < b.len() {
        // `i` is at an ASCII byte whenever `raw` is sliced at it.
        match b[i] {
            b'&' => match char_ref(&b[i + 1..]) {
                Some((c, len)) => {
                    out.push_str(&raw[done..i]);
                    out.push(c);
                    i += 1 + len;
                    done = i;
                }
                None => i += 1,
            },
            b'\r' => {
                out.push_str(&raw[done..i]);
                out.push('\n');
                i += if b.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                done = i;
            }
            b'\0' => {
                out.push_str(&raw[done..i]);
                out.push('\u{FFFD}');
                i += 1;
                done = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&raw[done..]);
    Cow::Owned(out)
}

/// The longest name in [`NAMED_REFERENCES`].
const MAX_REFERENCE_NAME: usize = 8;

/// Decodes the character reference after a `&` in an attribute value: the character and
/// how many bytes of `rest` it spans, or `None` if the `&` stays as written.
fn char_ref(rest: &[u8]) -> Option<(char, usize)> {
    if rest.starts_with(b"amp;") {
        return Some(('&', 4));
    }
    match *rest.first()? {
        b'#' => numeric_char_ref(rest),
        c if c.is_ascii_alphanumeric() => {
            let run = rest
                .iter()
                .take(MAX_REFERENCE_NAME + 1)
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            if run <= MAX_REFERENCE_NAME
                && rest.get(run) == Some(&b';')
                && let Some((c, _)) = named_reference(&rest[..run])
            {
                return Some((c, run + 1));
            }
            // The longest name that may appear without its `;`. In an attribute value, it is
            // left as written when followed by `=` or an alphanumeric (`?a=1&copy=2`).
            let (c, len) = (1..=run.min(MAX_REFERENCE_NAME)).rev().find_map(|len| {
                let (c, legacy) = named_reference(&rest[..len])?;
                legacy.then_some((c, len))
            })?;
            let literal = rest
                .get(len)
                .is_some_and(|&n| n == b'=' || n.is_ascii_alphanumeric());
            (!literal).then_some((c, len))
        }
        _ => None,
    }
}

/// `&#123;` / `&#x7B;` (the `;` is optional), with the standard's replacements.
fn numeric_char_ref(rest: &[u8]) -> Option<(char, usize)> {
    let (radix, start) = match rest.get(1) {
        Some(b'x' | b'X') => (16, 2),
        _ => (10, 1),
    };
    let digits = rest
        .get(start..)?
        .iter()
        .take_while(|c| char::from(**c).is_digit(radix))
        .count();
    if digits == 0 {
        return None;
    }
    let value = rest[start..start + digits].iter().fold(0u32, |acc, &c| {
        let digit = char::from(c).to_digit(radix).unwrap_or(0);
        acc.saturating_mul(radix)
            .saturating_add(digit)
            .min(0x11_0000)
    });
    let mut len = start + digits;
    if rest.get(len) == Some(&b';') {
        len += 1;
    }
    let c = match value {
        0x80..=0x9F => C1_REPLACEMENTS[value as usize - 0x80],
        0 => '\u{FFFD}',
        _ => char::from_u32(value).unwrap_or('\u{FFFD}'),
    };
    Some((c, len))
}

/// What numeric references to 0x80..=0x9F mean (windows-1252's characters there).
const C1_REPLACEMENTS: [char; 32] = [
    '\u{20AC}', '\u{81}', '\u{201A}', '\u{192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{2C6}', '\u{2030}', '\u{160}', '\u{2039}', '\u{152}', '\u{8D}', '\u{17D}', '\u{8F}',
    '\u{90}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{2DC}', '\u{2122}', '\u{161}', '\u{203A}', '\u{153}', '\u{9D}', '\u{17E}', '\u{178}',
];

/// Looks up a reference name (without `&` and `;`): its character, and whether it may also
/// appear without the `;`.
fn named_reference(name: &[u8]) -> Option<(char, bool)> {
    NAMED_REFERENCES
        .binary_search_by(|(n, _, _)| n.as_bytes().cmp(name))
        .ok()
        .map(|i| (NAMED_REFERENCES[i].1, NAMED_REFERENCES[i].2))
}

/// HTML 4's named character references plus `&apos;`, sorted by name, with the characters
/// HTML5 gives them and whether the name may appear without its `;` (the legacy ones).
#[rustfmt::skip]
static NAMED_REFERENCES: [(&str, char, bool); 259] = [
    ("AElig", '\u{C6}', true), ("AMP", '\u{26}', true), ("Aacute", '\u{C1}', true),
    ("Acirc", '\u{C2}', true), ("Agrave", '\u{C0}', true), ("Alpha", '\u{391}', false),
    ("Aring", '\u{C5}', true), ("Atilde", '\u{C3}', true), ("Auml", '\u{C4}', true),
    ("Beta", '\u{392}', false), ("COPY", '\u{A9}', true), ("Ccedil", '\u{C7}', true),
    ("Chi", '\u{3A7}', false), ("Dagger", '\u{2021}', false), ("Delta", '\u{394}', false),
    ("ETH", '\u{D0}', true), ("Eacute", '\u{C9}', true), ("Ecirc", '\u{CA}', true),
    ("Egrave", '\u{C8}', true), ("Epsilon", '\u{395}', false), ("Eta", '\u{397}', false),
    ("Euml", '\u{CB}', true), ("GT", '\u{3E}', true), ("Gamma", '\u{393}', false),
    ("Iacute", '\u{CD}', true), ("Icirc", '\u{CE}', true), ("Igrave", '\u{CC}', true),
    ("Iota", '\u{399}', false), ("Iuml", '\u{CF}', true), ("Kappa", '\u{39A}', false),
    ("LT", '\u{3C}', true), ("Lambda", '\u{39B}', false), ("Mu", '\u{39C}', false),
    ("Ntilde", '\u{D1}', true), ("Nu", '\u{39D}', false), ("OElig", '\u{152}', false),
    ("Oacute", '\u{D3}', true), ("Ocirc", '\u{D4}', true), ("Ograve", '\u{D2}', true),
    ("Omega", '\u{3A9}', false), ("Omicron", '\u{39F}', false), ("Oslash", '\u{D8}', true),
    ("Otilde", '\u{D5}', true), ("Ouml", '\u{D6}', true), ("Phi", '\u{3A6}', false),
    ("Pi", '\u{3A0}', false), ("Prime", '\u{2033}', false), ("Psi", '\u{3A8}', false),
    ("QUOT", '\u{22}', true), ("REG", '\u{AE}', true), ("Rho", '\u{3A1}', false),
    ("Scaron", '\u{160}', false), ("Sigma", '\u{3A3}', false), ("THORN", '\u{DE}', true),
    ("Tau", '\u{3A4}', false), ("Theta", '\u{398}', false), ("Uacute", '\u{DA}', true),
    ("Ucirc", '\u{DB}', true), ("Ugrave", '\u{D9}', true), ("Upsilon", '\u{3A5}', false),
    ("Uuml", '\u{DC}', true), ("Xi", '\u{39E}', false), ("Yacute", '\u{DD}', true),
    ("Yuml", '\u{178}', false), ("Zeta", '\u{396}', false), ("aacute", '\u{E1}', true),
    ("acirc", '\u{E2}', true), ("acute", '\u{B4}', true), ("aelig", '\u{E6}', true),
    ("agrave", '\u{E0}', true), ("alefsym", '\u{2135}', false), ("alpha", '\u{3B1}', false),
    ("amp", '\u{26}', true), ("and", '\u{2227}', false), ("ang", '\u{2220}', false),
    ("apos", '\u{27}', false), ("aring", '\u{E5}', true), ("asymp", '\u{2248}', false),
    ("atilde", '\u{E3}', true), ("auml", '\u{E4}', true), ("bdquo", '\u{201E}', false),
    ("beta", '\u{3B2}', false), ("brvbar", '\u{A6}', true), ("bull", '\u{2022}', false),
    ("cap", '\u{2229}', false), ("ccedil", '\u{E7}', true), ("cedil", '\u{B8}', true),
    ("cent", '\u{A2}', true), ("chi", '\u{3C7}', false), ("circ", '\u{2C6}', false),
    ("clubs", '\u{2663}', false), ("cong", '\u{2245}', false), ("copy", '\u{A9}', true),
    ("crarr", '\u{21B5}', false), ("cup", '\u{222A}', false), ("curren", '\u{A4}', true),
    ("dArr", '\u{21D3}', false), ("dagger", '\u{2020}', false), ("darr", '\u{2193}', false),
    ("deg", '\u{B0}', true), ("delta", '\u{3B4}', false), ("diams", '\u{2666}', false),
    ("divide", '\u{F7}', true), ("eacute", '\u{E9}', true), ("ecirc", '\u{EA}', true),
    ("egrave", '\u{E8}', true), ("empty", '\u{2205}', false), ("emsp", '\u{2003}', false),
    ("ensp", '\u{2002}', false), ("epsilon", '\u{3B5}', false), ("equiv", '\u{2261}', false),
    ("eta", '\u{3B7}', false), ("eth", '\u{F0}', true), ("euml", '\u{EB}', true),
    ("euro", '\u{20AC}', false), ("exist", '\u{2203}', false), ("fnof", '\u{192}', false),
    ("forall", '\u{2200}', false), ("frac12", '\u{BD}', true), ("frac14", '\u{BC}', true),
    ("frac34", '\u{BE}', true), ("frasl", '\u{2044}', false), ("gamma", '\u{3B3}', false),
    ("ge", '\u{2265}', false), ("gt", '\u{3E}', true), ("hArr", '\u{21D4}', false),
    ("harr", '\u{2194}', false), ("hearts", '\u{2665}', false), ("hellip", '\u{2026}', false),
    ("iacute", '\u{ED}', true), ("icirc", '\u{EE}', true), ("iexcl", '\u{A1}', true),
    ("igrave", '\u{EC}', true), ("image", '\u{2111}', false), ("infin", '\u{221E}', false),
    ("int", '\u{222B}', false), ("iota", '\u{3B9}', false), ("iquest", '\u{BF}', true),
    ("isin", '\u{2208}', false), ("iuml", '\u{EF}', true), ("kappa", '\u{3BA}', false),
    ("lArr", '\u{21D0}', false), ("lambda", '\u{3BB}', false), ("lang", '\u{27E8}', false),
    ("laquo", '\u{AB}', true), ("larr", '\u{2190}', false), ("lceil", '\u{2308}', false),
    ("ldquo", '\u{201C}', false), ("le", '\u{2264}', false), ("lfloor", '\u{230A}', false),
    ("lowast", '\u{2217}', false), ("loz", '\u{25CA}', false), ("lrm", '\u{200E}', false),
    ("lsaquo", '\u{2039}', false), ("lsquo", '\u{2018}', false), ("lt", '\u{3C}', true),
    ("macr", '\u{AF}', true), ("mdash", '\u{2014}', false), ("micro", '\u{B5}', true),
    ("middot", '\u{B7}', true), ("minus", '\u{2212}', false), ("mu", '\u{3BC}', false),
    ("nabla", '\u{2207}', false), ("nbsp", '\u{A0}', true), ("ndash", '\u{2013}', false),
    ("ne", '\u{2260}', false), ("ni", '\u{220B}', false), ("not", '\u{AC}', true),
    ("notin", '\u{2209}', false), ("nsub", '\u{2284}', false), ("ntilde", '\u{F1}', true),
    ("nu", '\u{3BD}', false), ("oacute", '\u{F3}', true), ("ocirc", '\u{F4}', true),
    ("oelig", '\u{153}', false), ("ograve", '\u{F2}', true), ("oline", '\u{203E}', false),
    ("omega", '\u{3C9}', false), ("omicron", '\u{3BF}', false), ("oplus", '\u{2295}', false),
    ("or", '\u{2228}', false), ("ordf", '\u{AA}', true), ("ordm", '\u{BA}', true),
    ("oslash", '\u{F8}', true), ("otilde", '\u{F5}', true), ("otimes", '\u{2297}', false),
    ("ouml", '\u{F6}', true), ("para", '\u{B6}', true), ("part", '\u{2202}', false),
    ("permil", '\u{2030}', false), ("perp", '\u{22A5}', false), ("phi", '\u{3C6}', false),
    ("pi", '\u{3C0}', false), ("piv", '\u{3D6}', false), ("plusmn", '\u{B1}', true),
    ("pound", '\u{A3}', true), ("prime", '\u{2032}', false), ("prod", '\u{220F}', false),
    ("prop", '\u{221D}', false), ("psi", '\u{3C8}', false), ("quot", '\u{22}', true),
    ("rArr", '\u{21D2}', false), ("radic", '\u{221A}', false), ("rang", '\u{27E9}', false),
    ("raquo", '\u{BB}', true), ("rarr", '\u{2192}', false), ("rceil", '\u{2309}', false),
    ("rdquo", '\u{201D}', false), ("real", '\u{211C}', false), ("reg", '\u{AE}', true),
    ("rfloor", '\u{230B}', false), ("rho", '\u{3C1}', false), ("rlm", '\u{200F}', false),
    ("rsaquo", '\u{203A}', false), ("rsquo", '\u{2019}', false), ("sbquo", '\u{201A}', false),
    ("scaron", '\u{161}', false), ("sdot", '\u{22C5}', false), ("sect", '\u{A7}', true),
    ("shy", '\u{AD}', true), ("sigma", '\u{3C3}', false), ("sigmaf", '\u{3C2}', false),
    ("sim", '\u{223C}', false), ("spades", '\u{2660}', false), ("sub", '\u{2282}', false),
    ("sube", '\u{2286}', false), ("sum", '\u{2211}', false), ("sup", '\u{2283}', false),
    ("sup1", '\u{B9}', true), ("sup2", '\u{B2}', true), ("sup3", '\u{B3}', true),
    ("supe", '\u{2287}', false), ("szlig", '\u{DF}', true), ("tau", '\u{3C4}', false),
    ("there4", '\u{2234}', false), ("theta", '\u{3B8}', false), ("thetasym", '\u{3D1}', false),
    ("thinsp", '\u{2009}', false), ("thorn", '\u{FE}', true), ("tilde", '\u{2DC}', false),
    ("times", '\u{D7}', true), ("trade", '\u{2122}', false), ("uArr", '\u{21D1}', false),
    ("uacute", '\u{FA}', true), ("uarr", '\u{2191}', false), ("ucirc", '\u{FB}', true),
    ("ugrave", '\u{F9}', true), ("uml", '\u{A8}', true), ("upsih", '\u{3D2}', false),
    ("upsilon", '\u{3C5}', false), ("uuml", '\u{FC}', true), ("weierp", '\u{2118}', false),
    ("xi", '\u{3BE}', false), ("yacute", '\u{FD}', true), ("yen", '\u{A5}', true),
    ("yuml", '\u{FF}', true), ("zeta", '\u{3B6}', false), ("zwj", '\u{200D}', false),
    ("zwnj", '\u{200C}', false),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entity_table_is_sorted_and_bounded() {
        assert!(
            NAMED_REFERENCES
                .windows(2)
                .all(|w| w[0].0.as_bytes() < w[1].0.as_bytes())
        );
        assert_eq!(
            NAMED_REFERENCES.iter().map(|e| e.0.len()).max(),
            Some(MAX_REFERENCE_NAME)
        );
        assert_eq!(NAMED_REFERENCES.iter().filter(|e| e.2).count(), 106);
    }
}
