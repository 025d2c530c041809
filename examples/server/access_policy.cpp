#include "access_policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <fstream>

namespace server {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The name part of a Host value, without the port and IPv6 brackets; nullopt when malformed.
std::optional<std::string> host_name(const std::string& host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return std::nullopt;
    const std::string rest = host.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return std::nullopt;
    return host.substr(1, close - 1);
  }
  const size_t colon = host.find(':');
  if (colon != std::string::npos && host.find(':', colon + 1) != std::string::npos) return std::nullopt;
  std::string name = host.substr(0, colon);
  if (!name.empty() && name.back() == '.') name.pop_back();  // "localhost." is "localhost"
  return lower(name);
}

bool is_ip_literal(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

bool is_loopback(const std::string& addr) {
  unsigned char buf[4];
  return addr == "::1" || (inet_pton(AF_INET, addr.c_str(), buf) == 1 && buf[0] == 127);
}

bool is_wildcard(const std::string& addr) { return addr == "0.0.0.0" || addr == "::"; }

}  // namespace

bool host_allowed(const AccessPolicy& policy, const std::string& host_header) {
  if (host_header.empty()) return true;
  const auto name = host_name(host_header);
  if (!name || name->empty()) return false;
  if (*name == lower(policy.bound_host)) return true;
  for (const std::string& allowed : policy.allowed_hosts)
    if (*name == lower(allowed)) return true;
  if (is_loopback(policy.bound_host) && (*name == "localhost" || is_loopback(*name))) return true;
  // A literal address cannot be rebound by DNS; on all interfaces any of ours may be used.
  return is_wildcard(policy.bound_host) && is_ip_literal(*name);
}

bool api_key_matches(const std::string& key, const std::string& authorization) {
  const std::string expected = "Bearer " + key;
  // Every byte of the received header is compared whatever matched so far.
  unsigned diff = expected.size() == authorization.size() ? 0u : 1u;
  for (size_t i = 0; i < authorization.size(); ++i)
    diff |= static_cast<unsigned char>(authorization[i]) ^
            static_cast<unsigned char>(i < expected.size() ? expected[i] : 0);
  return diff == 0;
}

bool is_json_content_type(const std::string& content_type) {
  std::string media = lower(content_type.substr(0, content_type.find(';')));
  media.erase(std::remove_if(media.begin(), media.end(), [](unsigned char c) { return std::isspace(c); }), media.end());
  return media == "application/json";
}

std::optional<std::string> cors_allow_origin(const AccessPolicy& policy, const std::string& origin) {
  if (policy.cors_origin.empty() || origin.empty()) return std::nullopt;
  if (policy.cors_origin == "*") return std::string("*");
  if (origin == policy.cors_origin) return origin;
  return std::nullopt;
}

std::optional<std::string> read_api_key_file(const std::string& path, std::string* error) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    *error = "cannot read the API key file " + path;
    return std::nullopt;
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
  if (line.empty()) {
    *error = "the API key file " + path + " starts with an empty line";
    return std::nullopt;
  }
  return line;
}

}  // namespace server
