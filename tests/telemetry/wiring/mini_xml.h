// A strict little XML parser for the tests: elements, attributes, text, the five predefined entities and
// numeric references, an optional <?xml ...?> prolog. Anything else (a mismatched tag, an unquoted or
// duplicate attribute, a bare '&' or '<') is an error, so a heatmap that parses here is well-formed.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace wirewise::wiring::testing {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<std::unique_ptr<XmlElement>> children;
  std::string text;  // concatenated character data directly inside this element

  // Every descendant (depth first) named `name`.
  void findAll(const std::string& n, std::vector<const XmlElement*>* out) const {
    for (const auto& c : children) {
      if (c->name == n) out->push_back(c.get());
      c->findAll(n, out);
    }
  }
};

class MiniXml {
 public:
  // Parses a whole document; on failure returns nullptr and sets error() to what and where.
  std::unique_ptr<XmlElement> parse(const std::string& doc) {
    s_ = doc;
    i_ = 0;
    error_.clear();
    skipSpace();
    if (s_.compare(i_, 5, "<?xml") == 0) {
      size_t end = s_.find("?>", i_);
      if (end == std::string::npos) return fail("unterminated prolog");
      i_ = end + 2;
    }
    skipSpace();
    auto root = element();
    if (!root) return nullptr;
    skipSpace();
    if (i_ != s_.size()) return fail("content after the root element");
    return root;
  }
  const std::string& error() const { return error_; }

 private:
  std::unique_ptr<XmlElement> fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(i_);
    return nullptr;
  }
  void skipSpace() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool nameChar(char c) const { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.'; }
  std::string name() {
    size_t start = i_;
    while (i_ < s_.size() && nameChar(s_[i_])) ++i_;
    return s_.substr(start, i_ - start);
  }
  // "#39" or "#x27": the character when it is ASCII, else '?' (this reader keeps bytes, not code points).
  static char numericRef(const std::string& ent) {
    const bool hex = ent.size() > 2 && (ent[1] == 'x' || ent[1] == 'X');
    const long v = std::strtol(ent.c_str() + (hex ? 2 : 1), nullptr, hex ? 16 : 10);
    return v > 0 && v < 128 ? static_cast<char>(v) : '?';
  }
  // Character data up to `stop`, with entities resolved; false on a bare '&' or '<'.
  bool chars(char stop, std::string* out) {
    while (i_ < s_.size() && s_[i_] != stop) {
      char c = s_[i_];
      if (c == '<' && stop != '<') return false;
      if (c == '&') {
        size_t semi = s_.find(';', i_);
        if (semi == std::string::npos) return false;
        std::string ent = s_.substr(i_ + 1, semi - i_ - 1);
        static const std::map<std::string, char> kEntities = {
            {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
        if (auto it = kEntities.find(ent); it != kEntities.end()) out->push_back(it->second);
        else if (ent.size() > 1 && ent[0] == '#') out->push_back(numericRef(ent));
        else return false;
        i_ = semi + 1;
        continue;
      }
      out->push_back(c);
      ++i_;
    }
    return true;
  }
  std::unique_ptr<XmlElement> element() {
    if (i_ >= s_.size() || s_[i_] != '<') return fail("expected '<'");
    ++i_;
    auto e = std::make_unique<XmlElement>();
    e->name = name();
    if (e->name.empty()) return fail("empty element name");
    for (;;) {
      skipSpace();
      if (i_ >= s_.size()) return fail("unterminated start tag");
      if (s_.compare(i_, 2, "/>") == 0) {
        i_ += 2;
        return e;
      }
      if (s_[i_] == '>') {
        ++i_;
        break;
      }
      std::string attr = name();
      if (attr.empty()) return fail("bad attribute name");
      skipSpace();
      if (i_ >= s_.size() || s_[i_] != '=') return fail("expected '=' after " + attr);
      ++i_;
      skipSpace();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) return fail("unquoted value of " + attr);
      const char q = s_[i_++];
      std::string value;
      if (!chars(q, &value) || i_ >= s_.size()) return fail("bad value of " + attr);
      ++i_;
      if (!e->attrs.emplace(attr, value).second) return fail("duplicate attribute " + attr);
    }
    for (;;) {
      if (i_ >= s_.size()) return fail("unterminated element " + e->name);
      if (s_.compare(i_, 2, "</") == 0) {
        i_ += 2;
        std::string close = name();
        if (close != e->name) return fail("</" + close + "> closes <" + e->name + ">");
        skipSpace();
        if (i_ >= s_.size() || s_[i_] != '>') return fail("bad end tag");
        ++i_;
        return e;
      }
      if (s_[i_] == '<') {
        auto child = element();
        if (!child) return nullptr;
        e->children.push_back(std::move(child));
        continue;
      }
      if (!chars('<', &e->text)) return fail("bad character data in " + e->name);
    }
  }

  std::string s_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace wirewise::wiring::testing
