//! Page budgets per registrable domain: a spam farm's endless subdomains stopped by a budget
//! of hosts per domain, and a domain's pages by its page budget; in both stores, by one rule
//! (`frontier::HostBudget`).

use std::collections::BTreeSet;

use serde_json::Value;
use testweb::SiteConfig;

use crate::util::{Site, crawl, fast};

/// A farm: 60 hosts, `h{i}.farm.test`, every one a subdomain of `farm.test`, their pages
/// linking across hosts half the time, served by name on two addresses.
pub(crate) fn farm() -> Site {
    Site::start(SiteConfig {
        hosts: 60,
        pages_per_host: 10,
        addresses: 2,
        domain: "farm.test".to_owned(),
        inter_host_fraction: 0.5,
        ..SiteConfig::default()
    })
}

/// The flags of a crawl of the farm from its first host: the farm's domain in scope, its
/// names resolved, the crawl fast.
pub(crate) fn farm_flags(site: &Site) -> Vec<String> {
    let mut args = fast();
    args.extend(["--seed".into(), site.web.roots()[0].clone()]);
    args.extend(["--scope".into(), "domains".into()]);
    for entry in site.web.resolve_entries() {
        args.extend(["--resolve".into(), entry]);
    }
    args
}

/// The hosts of records, and how many records.
pub(crate) fn hosts_of(records: &[&Value]) -> BTreeSet<String> {
    records
        .iter()
        .map(|r| {
            let url = url::Url::parse(r["url"].as_str().unwrap()).unwrap();
            url.host_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn a_farms_subdomains_stop_at_the_budget_of_hosts_per_domain() {
    let site = farm();
    let unbounded = crawl(&farm_flags(&site));
    unbounded.assert_success();
    let all: Vec<&Value> = unbounded.records.values().collect();
    assert_eq!(
        hosts_of(&all).len(),
        60,
        "without a budget the farm is crawled whole"
    );

    let mut flags = farm_flags(&site);
    flags.extend(["--per-domain-hosts".into(), "10".into()]);
    let bounded = crawl(&flags);
    bounded.assert_success();
    let records: Vec<&Value> = bounded.records.values().collect();
    assert_eq!(hosts_of(&records).len(), 10);
    // Each of the ten crawled whole: the budget is on hosts, not on their pages.
    assert_eq!(records.len(), 10 * 10);
    let stderr = bounded.stderr();
    assert!(stderr.contains(" domain hosts"), "{stderr}");
}

#[test]
fn a_domains_pages_stop_at_its_page_budget() {
    let site = farm();
    let mut flags = farm_flags(&site);
    flags.extend(["--per-domain-pages".into(), "25".into()]);
    let bounded = crawl(&flags);
    bounded.assert_success();
    assert_eq!(bounded.records.len(), 25);
    assert!(
        bounded.stderr().contains(" domain pages"),
        "{}",
        bounded.stderr()
    );
}
