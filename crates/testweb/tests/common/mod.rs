//! A minimal HTTP/1.1 client over a raw `TcpStream`, for the tests: keep-alive, bodies
//! delimited by `Content-Length` (all testweb sends), an optional cap on the body.

#![allow(dead_code, unreachable_pub)]

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Whether the body was cut at the cap (the connection is then dropped).
    pub truncated: bool,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One keep-alive connection to a port of 127.0.0.1 (or of another loopback address, for a
/// host served by name), reopened when needed.
pub struct Conn {
    address: std::net::Ipv4Addr,
    port: u16,
    /// What the `Host` header says.
    authority: String,
    stream: Option<BufReader<TcpStream>>,
}

impl Conn {
    pub fn new(port: u16) -> Conn {
        Conn::at(
            std::net::Ipv4Addr::LOCALHOST,
            port,
            format!("127.0.0.1:{port}"),
        )
    }

    /// A connection to `address:port` for the host `authority` names.
    pub fn at(address: std::net::Ipv4Addr, port: u16, authority: String) -> Conn {
        Conn {
            address,
            port,
            authority,
            stream: None,
        }
    }

    /// Sends `GET target` and reads the answer, at most `cap` bytes of body.
    pub async fn get(&mut self, target: &str, cap: usize) -> io::Result<Response> {
        if self.stream.is_none() {
            let stream = TcpStream::connect((self.address, self.port)).await?;
            stream.set_nodelay(true)?;
            self.stream = Some(BufReader::new(stream));
        }
        let result = self.exchange(target, cap).await;
        match &result {
            Ok(response)
                if !response.truncated && response.header("connection") != Some("close") => {}
            _ => self.stream = None,
        }
        result
    }

    async fn exchange(&mut self, target: &str, cap: usize) -> io::Result<Response> {
        self.exchange_with(target, cap, &[]).await
    }

    /// Sends `GET target` with more header lines (`Name: value`), and reads the answer.
    pub async fn get_with(&mut self, target: &str, headers: &[String]) -> io::Result<Response> {
        if self.stream.is_none() {
            let stream = TcpStream::connect((self.address, self.port)).await?;
            stream.set_nodelay(true)?;
            self.stream = Some(BufReader::new(stream));
        }
        let result = self.exchange_with(target, usize::MAX, headers).await;
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    async fn exchange_with(
        &mut self,
        target: &str,
        cap: usize,
        headers: &[String],
    ) -> io::Result<Response> {
        let authority = &self.authority;
        let stream = self.stream.as_mut().expect("connected");
        let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
        let request = format!(
            "GET {target} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: testweb-tests\r\n{extra}\r\n"
        );
        stream.get_mut().write_all(request.as_bytes()).await?;
        read_response(stream, cap).await
    }
}

/// Reads a response from `stream`.
pub async fn read_response(stream: &mut BufReader<TcpStream>, cap: usize) -> io::Result<Response> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
    let mut line = String::new();
    if stream.read_line(&mut line).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    let status: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("status line"))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        stream.read_line(&mut line).await?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':').ok_or_else(|| bad("header"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = match headers.iter().find(|(n, _)| n == "content-length") {
        Some((_, v)) => v.parse().map_err(|_| bad("content-length"))?,
        // Never a body.
        None if status == 304 || status == 204 => 0,
        None => return Err(bad("no content-length")),
    };
    let take = length.min(cap);
    let mut body = vec![0; take];
    stream.read_exact(&mut body).await?;
    Ok(Response {
        status,
        headers,
        body,
        truncated: take < length,
    })
}

/// One request on a fresh connection.
pub async fn get(port: u16, target: &str) -> io::Result<Response> {
    Conn::new(port).get(target, usize::MAX).await
}
