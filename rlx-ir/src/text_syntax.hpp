// text_syntax.hpp (private): the lexical rules the text printer and parser share.
#pragma once

#include <string>
#include <string_view>

namespace rlx::ir::detail {

/// Characters that may start a bare identifier (op, field, enum, dtype and symbol names).
inline bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
/// Characters that may continue a bare identifier.
inline bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.';
}
/// Characters of a number or word token: digits, letters, '_', '.', '+', '-'.
inline bool is_word_char(char c) {
  return is_ident_char(c) || c == '+' || c == '-';
}

/// True when \p s prints without quotes: [A-Za-z_][A-Za-z0-9_.]* and not the keyword "none".
inline bool is_bare_ident(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0]) || s == "none")
    return false;
  for (char c : s)
    if (!is_ident_char(c))
      return false;
  return true;
}

/// \p s as a double-quoted literal: '"' and '\' are escaped, bytes below 0x20 and 0x7f are written
/// as \n, \t, \r or \xHH, every other byte (UTF-8 included) as is.
inline std::string quote(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kDigits[u >> 4];
      out += kDigits[u & 15u];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

/// \p s bare when it is an identifier, else quoted.
inline std::string ident_or_quote(std::string_view s) {
  return is_bare_ident(s) ? std::string(s) : quote(s);
}

/// True when a node label prints as a plain `# label` comment: not empty, no control bytes, no
/// leading or trailing space, and not starting with '"' (those print quoted: `# "label"`).
inline bool is_plain_label(std::string_view s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.front() == '"')
    return false;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f)
      return false;
  }
  return true;
}

} // namespace rlx::ir::detail
