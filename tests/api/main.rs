//! Integration tests: the real application, over HTTPS, on a fresh store per test.
//! Every store-dependent test runs against SQLite and — when `RECRUITD_TEST_DATABASE_URL`
//! names a PostgreSQL server — against PostgreSQL.

/// `store_test!(name)` turns `async fn name(b: Backend)` into a SQLite and a PostgreSQL test.
macro_rules! store_test {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[actix_web::test]
                async fn sqlite() {
                    super::$name($crate::helpers::Backend::Sqlite).await
                }
                #[actix_web::test]
                async fn postgres() {
                    match $crate::helpers::Backend::postgres().await {
                        Some(b) => {
                            let used = b.clone();
                            // Run as a task of its own, so that a failing test still
                            // drops its schema before its panic is passed on.
                            let outcome = actix_web::rt::spawn(super::$name(b)).await;
                            used.release().await;
                            if let Err(e) = outcome {
                                std::panic::resume_unwind(e.into_panic());
                            }
                        }
                        None => eprintln!("{} not set: PostgreSQL variant not run", $crate::helpers::PG_ENV),
                    }
                }
            }
        )*
    };
}

mod helpers;

mod admin;
mod auth;
mod build;
mod changes;
mod checkpoint;
mod cli;
mod cluster;
mod console;
mod demo;
mod docs;
mod doubt;
mod downloads;
mod early_refusals;
mod errors;
mod fleet;
mod grafana;
mod isolation;
mod lists;
mod loading;
mod observability;
mod openapi;
mod outage;
mod pagination;
mod pgcluster;
mod process;
mod ratelimit;
mod reclaim;
mod records;
mod search;
mod startup;
mod subresources;
mod sync;
mod webhooks;
mod writes;
