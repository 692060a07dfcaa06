//! URLs as they may be shown: a password in a URL (`redis://:pw@host`, a proxy's
//! `http://user:pw@proxy`) is a secret, and messages, logs and files carry URLs.

use std::borrow::Cow;

/// What stands for a secret that was taken out.
const HIDDEN: &str = "***";

/// Query parameters that carry a secret by their name (`redis+unix:///run/redis.sock?pass=`).
const SECRET_PARAMETERS: [&str; 5] = ["pass", "password", "token", "secret", "key"];

/// `url` with its password, and any query parameter named for a secret, replaced by `***`,
/// for a message, a log line or a file. A user name beside a password stays (it says which
/// account); a user name alone is hidden, as it is often a token
/// (`https://TOKEN@host/`). The text is not parsed as a URL, only split, so that a URL the
/// parser would refuse (a space in the password) is hidden all the same.
///
/// # Example
///
/// ```
/// use frontier::redact_url;
///
/// assert_eq!(redact_url("redis://:s3cret@10.0.0.5:6379/0"), "redis://:***@10.0.0.5:6379/0");
/// assert_eq!(redact_url("http://me:pw@proxy:3128"), "http://me:***@proxy:3128");
/// assert_eq!(redact_url("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
/// ```
pub fn redact_url(url: &str) -> Cow<'_, str> {
    let start = url.find("://").map_or(0, |i| i + 3);
    // The user info ends at the last `@` before any fragment, even when a password holds
    // a raw `/` or `?` (not a valid URL, but a secret all the same): better to hide a path
    // with an `@` in it than to show such a password.
    let fragment = url[start..].find('#').map_or(url.len(), |i| start + i);
    let at = url[start..fragment].rfind('@').map(|i| start + i);
    let authority_end = url[at.unwrap_or(start)..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| at.unwrap_or(start) + i);
    let mut shown = String::new();
    let mut rest = start;
    if let Some(at) = at.map(|at| at - start) {
        let userinfo = &url[start..start + at];
        shown.push_str(&url[..start]);
        if let Some((user, _)) = userinfo.split_once(':') {
            shown.push_str(user);
            shown.push(':');
        }
        shown.push_str(HIDDEN);
        rest = start + at;
    }
    let query = url[authority_end..]
        .find('?')
        .map(|i| authority_end + i + 1);
    if let Some(query) = query {
        let query_end = url[query..].find('#').map_or(url.len(), |i| query + i);
        let secret = url[query..query_end]
            .split('&')
            .any(|pair| is_secret_parameter(pair.split('=').next().unwrap_or("")));
        if secret {
            if shown.is_empty() {
                shown.push_str(&url[..rest]);
            }
            shown.push_str(&url[rest..query]);
            let pairs: Vec<String> = url[query..query_end]
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if is_secret_parameter(name) => format!("{name}={HIDDEN}"),
                    _ => pair.to_owned(),
                })
                .collect();
            shown.push_str(&pairs.join("&"));
            rest = query_end;
        }
    }
    if shown.is_empty() {
        return Cow::Borrowed(url);
    }
    shown.push_str(&url[rest..]);
    Cow::Owned(shown)
}

fn is_secret_parameter(name: &str) -> bool {
    SECRET_PARAMETERS
        .iter()
        .any(|secret| name.eq_ignore_ascii_case(secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_secret_parameters_are_hidden_and_the_rest_kept() {
        for (given, shown) in [
            (
                "redis://:WrongPw123@127.0.0.1:6392",
                "redis://:***@127.0.0.1:6392",
            ),
            (
                "rediss://admin:pw@cache.internal:6380/2",
                "rediss://admin:***@cache.internal:6380/2",
            ),
            (
                "socks5://u:p%40ss@10.1.1.1:1080",
                "socks5://u:***@10.1.1.1:1080",
            ),
            (
                "redis+unix:///run/redis.sock?db=1&pass=pw",
                "redis+unix:///run/redis.sock?db=1&pass=***",
            ),
            ("http://proxy:3128", "http://proxy:3128"),
            ("redis://user@host", "redis://***@host"),
            // Not a URL (a space in the password): hidden all the same.
            ("redis://:my pw@host:1", "redis://:***@host:1"),
            ("https://ghp_token@github.com/x", "https://***@github.com/x"),
            ("redis://h?password=pw#f", "redis://h?password=***#f"),
            ("redis://:pa/ss@h:1/0", "redis://:***@h:1/0"),
            ("redis://:pa?ss@h", "redis://:***@h"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redact_url(given), shown, "{given}");
        }
    }
}
