package demodata_test

import (
	"fmt"

	"github.com/aiusage/kit/internal/infra/demodata"
)

func ExampleGenerate() {
	d, err := demodata.Generate(demodata.Config{Seed: 1, Conversations: 100})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(d.Conversations), "conversations,", len(d.Assistants), "assistants,", len(d.Users), "users")
	c := d.Conversations[0]
	fmt.Println(c.Model, c.ModelProvider, len(c.Messages), "messages", c.Usage.TotalTokens, "tokens")
	// Output:
	// 100 conversations, 12 assistants, 10 users
	// gpt-4o openai 7 messages 8797 tokens
}
