//! Runs the test server until interrupted: `h2htalk-testserver [PORT] [CONFIG_JSON]`.
//! Prints the base URL on the first line of standard output.

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().map(|p| p.parse()).transpose()?.unwrap_or(0);
    let config = match args.next() {
        Some(json) => serde_json::from_str(&json)?,
        None => h2htalk_testserver::ServerConfig::default(),
    };
    let server = h2htalk_testserver::TestServer::start(config, port).await?;
    println!("{}", server.base_url());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
