// FileReplacer: a file lmrt writes is either the whole new file or what was there, and only a regular
// file is ever replaced (never written through a link, a folder, a FIFO or a device).
#include "runtime/util/file_replacer.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "test_support.h"

namespace {

using lmrt::Code;
using lmrt::replace_file;
using lmrt::test::read_file;

std::string fresh_path(const std::string& name) {
  const std::string path = lmrt::test::temp_dir() + "/" + name;
  ::unlink(path.c_str());
  ::unlink((path + ".tmp").c_str());
  return path;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

TEST(FileReplacer, WritesANewFileAndReplacesARegularOne) {
  const std::string path = fresh_path("replacer-new.bin");
  ASSERT_TRUE(replace_file(path, "first", 5).ok());
  EXPECT_EQ(read_file(path), "first");
  ASSERT_TRUE(replace_file(path, "second!", 7).ok());
  EXPECT_EQ(read_file(path), "second!");
  EXPECT_FALSE(exists(path + ".tmp"));
}

TEST(FileReplacer, NeverWritesThroughALinkOrIntoWhatIsNotARegularFile) {
  // A link to a regular file: the link is replaced by the new file, its target keeps its bytes.
  const std::string target = fresh_path("replacer-target.txt");
  ASSERT_TRUE(replace_file(target, "the user's", 10).ok());
  const std::string link = fresh_path("replacer-link.txt");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_TRUE(replace_file(link, "new", 3).ok());
  EXPECT_EQ(read_file(target), "the user's");
  EXPECT_EQ(read_file(link), "new");
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));

  // A folder, a FIFO, a device and a dangling link are refused and left as they were.
  const std::string dir = fresh_path("replacer-dir");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const std::string fifo = fresh_path("replacer-fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const std::string dangling = fresh_path("replacer-dangling");
  const std::string nowhere = fresh_path("replacer-nowhere");
  ASSERT_EQ(::symlink(nowhere.c_str(), dangling.c_str()), 0);
  for (const std::string& p : {dir, fifo, dangling, std::string("/dev/null")}) {
    const lmrt::Status s = replace_file(p, "x", 1);
    EXPECT_EQ(s.code(), Code::invalid_argument) << p;
    EXPECT_NE(s.message().find("is not a regular file"), std::string::npos) << s.message();
    EXPECT_FALSE(exists(p + ".tmp")) << p;
  }
  EXPECT_FALSE(exists(nowhere));  // the dangling link's target was not created
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ::rmdir(dir.c_str());
  ::unlink(fifo.c_str());
  ::unlink(dangling.c_str());
}

TEST(FileReplacer, ATemporaryFileAlreadyThereIsNeitherUsedNorRemoved) {
  const std::string path = fresh_path("replacer-busy.bin");
  ASSERT_TRUE(replace_file(path + ".tmp", "someone's", 9).ok());
  const lmrt::Status s = replace_file(path, "x", 1);
  EXPECT_EQ(s.code(), Code::io);
  EXPECT_NE(s.message().find("already exists"), std::string::npos) << s.message();
  EXPECT_EQ(read_file(path + ".tmp"), "someone's");
  EXPECT_FALSE(exists(path));
  ::unlink((path + ".tmp").c_str());
}

// A write that fails half way (a file size limit here; a full disk alike) leaves the old file whole and no
// temporary file. In a child process: the limit and the ignored SIGXFSZ must not reach the other tests.
TEST(FileReplacer, AFailedWriteLeavesTheOldFileWhole) {
  const std::string path = fresh_path("replacer-limit.bin");
  const std::string old(4000, 'o');
  ASSERT_TRUE(replace_file(path, old.data(), old.size()).ok());
  const std::string big(8000, 'n');
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{1024, 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const lmrt::Status s = replace_file(path, big.data(), big.size());
    _exit(s.code() == Code::io && s.message().find("cannot write") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_file(path), old);
  EXPECT_FALSE(exists(path + ".tmp"));
}

}  // namespace
