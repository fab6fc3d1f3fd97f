package push_test

import (
	"reflect"
	"testing"

	fm "github.com/foldermirror/foldermirror"
	"github.com/foldermirror/foldermirror/push"
)

func TestFeeds(t *testing.T) {
	tests := []struct {
		name string
		libs []fm.Library
		want []push.Feed
	}{
		{name: "none"},
		{
			name: "a storage account's My Drive libraries share its feed",
			libs: []fm.Library{
				{ID: "lib-b", StorageAccount: "Storage@Example.com", RootFolderID: "f2"},
				{ID: "lib-a", StorageAccount: "storage@example.com", RootFolderID: "f1"},
			},
			want: []push.Feed{{Key: "user:storage@example.com", User: "storage@example.com", Libraries: []string{"lib-a", "lib-b"}}},
		},
		{
			name: "each shared drive has its feed, each account its own",
			libs: []fm.Library{
				{ID: "team", StorageAccount: "s@example.com", SharedDriveID: "0AD2"},
				{ID: "mine", StorageAccount: "s@example.com", RootFolderID: "f1"},
				{ID: "other", StorageAccount: "t@example.com", RootFolderID: "f3"},
				{ID: "ops", StorageAccount: "t@example.com", SharedDriveID: "0AD1"},
			},
			want: []push.Feed{
				{Key: "drive:0AD1", User: "t@example.com", DriveID: "0AD1", Libraries: []string{"ops"}},
				{Key: "drive:0AD2", User: "s@example.com", DriveID: "0AD2", Libraries: []string{"team"}},
				{Key: "user:s@example.com", User: "s@example.com", Libraries: []string{"mine"}},
				{Key: "user:t@example.com", User: "t@example.com", Libraries: []string{"other"}},
			},
		},
		{
			name: "two libraries of one shared drive share its feed, watched as the first's account",
			libs: []fm.Library{
				{ID: "z", StorageAccount: "a@example.com", SharedDriveID: "0AD1"},
				{ID: "y", StorageAccount: "b@example.com", SharedDriveID: "0AD1"},
			},
			want: []push.Feed{{Key: "drive:0AD1", User: "b@example.com", DriveID: "0AD1", Libraries: []string{"y", "z"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := push.Feeds(tt.libs)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Feeds = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}
