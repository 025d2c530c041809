// The HTTP layer of `lmrt serve`: GNU libmicrohttpd driven by a fixed pool of event loops (poll),
// with every limit a hostile client could otherwise stretch (header size, body size, header and
// body time, idle keep-alive time, connections in total and per client address, listen backlog).
// Handlers run on the event loops and must not block: long work is handed to another thread
// through an Exchange, which answers later (once, or as a stream of bytes).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

struct MHD_Connection;
struct MHD_Daemon;

namespace server {

struct HttpGlue;

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;        // request line + headers
  size_t max_body_bytes = 4u << 20;           // 413 beyond
  unsigned header_timeout_s = 10;             // from connection (or previous answer) to the end of the headers
  unsigned body_timeout_s = 30;               // from the end of the headers to the end of the body
  unsigned idle_timeout_s = 5;                // no byte either way on an open connection
  unsigned max_connections = 1024;            // in total
  unsigned max_connections_per_client = 256;  // per client IP address
  unsigned listen_backlog = 1024;
  unsigned event_threads = 2;  // fixed; handlers never block them
};

struct HttpRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string client;  // the peer's IP address

  // The header's value, "" when absent.
  std::string header(const std::string& lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// One request answered later from another thread: either once (answer) or as a stream (begin_stream,
// write ... end; bytes written before begin_stream wait for it). Thread-safe; the HTTP layer keeps it
// alive.
class Exchange {
 public:
  // `headers` go on whatever answer or stream head is given (CORS, decided with the request).
  explicit Exchange(std::vector<std::pair<std::string, std::string>> headers = {}) : headers_(std::move(headers)) {}
  // Completes a deferred (not streamed) request.
  void answer(HttpResponse response);
  // Answers with a stream: `head` gives its status, type and headers; the body is what write() gives.
  void begin_stream(HttpResponse head);
  // Appends bytes to a streamed answer; false when the client is gone or the exchange cancelled.
  bool write(const std::string& bytes);
  // Ends a streamed answer.
  void end();
  // Closes a deferred request's connection without an answer: its client is gone, so there is no one
  // to tell and no status to count.
  void drop();
  // True once the client closed its side or the connection ended: stop working for it.
  bool client_gone();

 private:
  friend struct HttpGlue;
  const std::vector<std::pair<std::string, std::string>> headers_;
  std::mutex mu_;
  MHD_Connection* connection_ = nullptr;  // null once the connection ended
  int fd_ = -1;
  bool suspended_ = false;
  bool head_given_ = false;  // begin_stream() was called
  bool streamed_ = false;    // the stream's head went to the connection
  bool done_ = false;        // answer(), end() or drop() was called
  bool answered_ = false;    // answer()
  bool dropped_ = false;     // drop(): close without an answer
  bool gone_ = false;
  std::string pending_;  // streamed bytes not yet handed to the connection
  HttpResponse answer_;  // answer()'s, or begin_stream()'s head
  void resume_locked();
};

// What a handler decides for a request.
struct HttpOutcome {
  enum Kind { kNow, kLater } kind = kNow;
  HttpResponse response;               // kNow: the answer
  std::shared_ptr<Exchange> exchange;  // kLater: the handle given to the thread that answers
};

class HttpServer {
 public:
  using Handler = std::function<HttpOutcome(const HttpRequest&)>;
  HttpServer(HttpLimits limits, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Receives the status of every answer as it is queued (refusals of this layer included; a stream
  // counts when its head goes out). Set before start(); called on the event loops, must not block.
  void set_status_observer(std::function<void(int status)> observer) { on_status_ = std::move(observer); }

  // Binds host:port and starts the event loops; false with a message on failure.
  bool start(const std::string& host, int port, std::string* error);
  // Stops accepting new connections; open ones are still served.
  void stop_accepting();
  // Requests being served or waiting for an answer.
  size_t active_requests() const { return active_.load(); }
  // Ends every connection and the event loops. Call when no Exchange is pending any more.
  void stop();

  friend struct HttpGlue;  // libmicrohttpd's callbacks

 private:
  struct Connection;  // per-connection deadline, for the header and body time limits
  void reap_slow_clients();

  HttpLimits limits_;
  Handler handler_;
  std::function<void(int)> on_status_;
  MHD_Daemon* daemon_ = nullptr;
  int quiesced_fd_ = -1;  // the listening socket stop_accepting() took back, closed by stop()
  std::atomic<size_t> active_{0};

  std::mutex conn_mu_;
  std::map<Connection*, int> connections_;  // open connections and their sockets
  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  bool stopping_ = false;
  std::thread reaper_;
};

}  // namespace server
