#include "common/safe_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace wirewise {
namespace {

std::string errnoText(int e) { return std::strerror(e); }

std::string uidText(uid_t uid) { return "uid " + std::to_string(static_cast<unsigned long>(uid)); }

std::string modeText(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// Owner and kind of an open file: "" or why it is refused. A log may also be a pipe of the user's own (a
// log shipper reading it); a secret is a regular file.
std::string ownedFile(const std::string& path, const struct stat& st, uid_t uid, bool pipeToo) {
  if (!S_ISREG(st.st_mode) && !(pipeToo && S_ISFIFO(st.st_mode)))
    return path + (pipeToo ? " is neither a regular file nor a pipe" : " is not a regular file") + ": remove it";
  if (st.st_uid != uid)
    return path + " belongs to " + uidText(st.st_uid) + ", not to this user (" + uidText(uid) + "): remove it";
  return "";
}

}  // namespace

std::string makePrivateDirs(const std::string& dir) {
  if (dir.empty()) return "";
  // Each prefix ending before a '/', then the whole path: parents first.
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at < dir.size() && dir[at] != '/') continue;
    const std::string prefix = dir.substr(0, at);
    if (::mkdir(prefix.c_str(), 0700) == 0 || errno == EEXIST) continue;
    const int e = errno;
    struct stat st{};
    if (::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;  // e.g. EACCES on an existing parent
    return "cannot create directory " + prefix + ": " + errnoText(e);
  }
  return "";
}

int openOwnDir(const std::string& dir, uid_t uid, std::string* problem) {
  problem->clear();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    struct stat st{};
    if ((e == ELOOP || e == ENOTDIR) && ::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      *problem = "the directory " + dir + " is a symbolic link (another user may have planted it): remove it";
    else
      *problem = "cannot open directory " + dir + ": " + errnoText(e);
    return -1;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    *problem = "cannot inspect directory " + dir + ": " + errnoText(errno);
  } else if (st.st_uid != uid) {
    *problem = "the directory " + dir + " belongs to " + uidText(st.st_uid) + ", not to this user (" + uidText(uid) +
               "): remove it";
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    *problem = "the directory " + dir + " (mode " + modeText(st.st_mode) +
               ") is writable by group or others: chmod 700 " + dir;
  } else {
    return fd;
  }
  ::close(fd);
  return -1;
}

int openAppendLog(int dirFd, const std::string& path, uid_t uid, std::string* problem) {
  problem->clear();
  const size_t slash = path.rfind('/');
  const std::string leaf = dirFd >= 0 && slash != std::string::npos ? path.substr(slash + 1) : path;
  // O_NONBLOCK: a pipe at the path would block this open until someone reads it (one planted by another
  // user would hang the job's init before the owner check below); cleared for the file we keep.
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
  const int fd = dirFd >= 0 ? ::openat(dirFd, leaf.c_str(), flags, 0600) : ::open(path.c_str(), flags, 0600);
  if (fd < 0) {
    const int e = errno;
    struct stat st{};
    const int found = dirFd >= 0 ? ::fstatat(dirFd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW)
                                 : ::lstat(path.c_str(), &st);
    if (e == ELOOP && found == 0 && S_ISLNK(st.st_mode))
      *problem = path + " is a symbolic link (refused: another user may have planted it): remove it";
    else if (e == ENXIO && found == 0 && S_ISFIFO(st.st_mode))
      *problem = path + " is a pipe that nobody reads: start its reader first";
    else
      *problem = "cannot open " + path + ": " + errnoText(e);
    return -1;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    *problem = "cannot inspect " + path + ": " + errnoText(errno);
  } else if (std::string why = ownedFile(path, st, uid, /*pipeToo=*/true); !why.empty()) {
    *problem = why;
  } else if (st.st_nlink != 1) {
    *problem = path + " has " + std::to_string(static_cast<unsigned long>(st.st_nlink)) +
               " hard links (one may be another user's): remove it";
  } else if (const int fl = ::fcntl(fd, F_GETFL); fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    *problem = "cannot configure " + path + ": " + errnoText(errno);
  } else {
    return fd;
  }
  ::close(fd);
  return -1;
}

std::string readSecretFile(const std::string& path, uid_t uid, size_t maxBytes, std::string* problem) {
  problem->clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *problem = "cannot open " + path + ": " + errnoText(errno) + ": create it with the key, then chmod 600 " + path;
    return "";
  }
  std::string text;
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    *problem = "cannot inspect " + path + ": " + errnoText(errno);
  } else if (std::string why = ownedFile(path, st, uid, /*pipeToo=*/false); !why.empty()) {
    *problem = why;
  } else if ((st.st_mode & 077) != 0) {
    *problem = path + " (mode " + modeText(st.st_mode) + ") may be read or written by group or others: chmod 600 " +
               path;
  } else if (static_cast<size_t>(st.st_size) > maxBytes) {
    *problem = path + " holds " + std::to_string(static_cast<long long>(st.st_size)) + " bytes, more than a key (" +
               std::to_string(maxBytes) + " at most): point the setting at the key's own file";
  } else {
    text.resize(maxBytes + 1);
    size_t got = 0;
    for (;;) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n > 0 && (got += static_cast<size_t>(n)) < text.size()) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) *problem = "cannot read " + path + ": " + errnoText(errno);
      break;
    }
    text.resize(got);
    if (problem->empty() && got > maxBytes)
      *problem = path + " holds more than a key (" + std::to_string(maxBytes) + " bytes at most)";
    const char* kSpace = " \t\r\n\v\f";
    const size_t first = text.find_first_not_of(kSpace);
    text = first == std::string::npos ? "" : text.substr(first, text.find_last_not_of(kSpace) - first + 1);
    if (problem->empty() && text.empty()) *problem = path + " is empty: write the job key into it";
  }
  ::close(fd);
  if (!problem->empty()) text.clear();
  return text;
}

}  // namespace wirewise
