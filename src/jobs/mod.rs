pub mod cron;
pub mod plan;
pub mod timing;
