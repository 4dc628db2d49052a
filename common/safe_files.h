// Files in places other users can reach (a shared /tmp, a shared file system): directories created
// private, files opened without following a link another user may have planted, and every check made on
// the open descriptor, so that nothing can be swapped between the check and the use. Each refusal is one
// sentence naming the path, what is wrong and the fix, ready for a WARN.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace wirewise {

// Creates the missing directories of `dir`, each with mode 0700 (the umask can only narrow it). Returns
// "" or the problem.
std::string makePrivateDirs(const std::string& dir);

// Opens `dir` itself (not through a symbolic link) and checks that it is a directory owned by `uid` that
// neither group nor others may write. Returns the descriptor (close-on-exec), or -1 with *problem set.
int openOwnDir(const std::string& dir, uid_t uid, std::string* problem);

// Opens a log for appending, creating it 0600: open(O_WRONLY|O_CREAT|O_APPEND|O_NOFOLLOW|O_CLOEXEC). With
// dirFd >= 0 (an openOwnDir descriptor of the path's directory) the last component of `path` is opened
// relative to it. A symbolic link is refused, and so is anything but a regular file or a pipe owned by `uid`
// with one link (another user's file or pipe, a hard link to one of ours, a device). The open never blocks:
// a pipe without a reader is refused too. Returns the descriptor (blocking, close-on-exec) or -1 with
// *problem set.
int openAppendLog(int dirFd, const std::string& path, uid_t uid, std::string* problem);

// Reads a secret kept in a file: a regular file owned by `uid` that no one else may read or write
// (mode & 077 == 0), at most maxBytes; returns its content without leading and trailing white space.
// Missing, unreadable, too open, too large or empty: "" with *problem set. Follows a symbolic link (a key
// kept on a shared file system may be reached through one); the checks are on the file it reaches.
std::string readSecretFile(const std::string& path, uid_t uid, size_t maxBytes, std::string* problem);

}  // namespace wirewise
